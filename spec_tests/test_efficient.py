"""Chapter: efficient attention (docs/efficient.md). Claims EFF-1 .. EFF-5.

Lecture note 2 §4.1: the naive implementation needs O(s²) memory, too much for long sequences
(s > 1024); the remedies are splitting the big matrix into blocks and FlashAttention.
Done with an online softmax, blocks change nothing but the order of the arithmetic:

    for each query block Q_i, for each key block (K_j, V_j):
        m' = max(m, rowmax S_ij)     l' = e^(m - m') l + rowsum e^(S_ij - m')     a' = e^(m - m') a + e^(S_ij - m') V_j
    out_i = a / l                    (S_ij = scale Q_i K_j^T, hidden keys at -inf)

so chunked attention must equal naive attention for every block size (EFF-1), keep its
peak memory O(L) (EFF-2), and flash kernels must match naive attention within the
low-precision rule of CONTRACT.md (EFF-3).

Block sizes reach an implementation as keyword arguments, `block_q` (queries per tile)
and `block_k` (keys per streamed block), of `scaled_dot_product_attention`,
`attention_weights` and `multi_head_attention`. An implementation whose functions do
not take them has no settable blocks: its EFF-1 and EFF-2 are "not implemented".
"""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference
from spec_tests.harness import carried, check, memory, tolerance
from spec_tests.harness.feedback import SpecFailure
from spec_tests.harness.strategies import SEEDS, AttentionCase, attention_cases, mha_cases, normal, random_mask
from spec_tests.harness.subject import not_applicable

claim = pytest.mark.claim
SDPA = "scaled_dot_product_attention"
BLOCKS = ("block_q", "block_k")

# Chunking multiplies the work per element by the number of tiles: short sequences keep
# block size 1 affordable (and Triton's interpreter, which runs each tile in Python).
CHUNK_LENGTHS = st.integers(1, 12)
CHUNK_BATCH = st.sampled_from([(), (2,)])
BLOCK_KINDS = ["1", "non-divisor", "L", "> L"]


def block_size(kind: str, L: int, extra: int) -> int:
    """A block size of the given kind for a sequence of length L: 1, one that does not divide L, L, or more."""
    if kind == "1":
        return 1
    if kind == "non-divisor":
        candidates = [b for b in range(2, L) if L % b]
        return candidates[extra % len(candidates)] if candidates else L + 1 + extra  # L <= 3 or L = 4: b > L
    if kind == "L":
        return L
    return L + 1 + extra


# The kinds of block_q and block_k and an offset, drawn as values (not through st.data()) so that a test's
# boundary inputs (harness/boundaries.py) can be written as explicit examples: blocks of 1 are the simplest.
BLOCK_CHOICES = st.tuples(st.sampled_from(BLOCK_KINDS), st.sampled_from(BLOCK_KINDS), st.integers(0, 7))


def blocks(choice: tuple, L_q: int, L_k: int) -> dict:
    """block_q and block_k of the kinds `choice` = (block_q's kind, block_k's kind, extra) names."""
    kq, kk, extra = choice
    return {"block_q": block_size(kq, L_q, extra), "block_k": block_size(kk, L_k, extra)}


# ================================================================================== EFF-1
@claim("EFF-1")
@given(case=attention_cases(lengths=CHUNK_LENGTHS, batch=CHUNK_BATCH), tiles=BLOCK_CHOICES)
def test_chunked_sdpa_equals_naive_for_every_block_size(impl, case, tiles):
    """Any block_q, block_k (1, a non-divisor of L, L, more than L), with masks, causal, L_q != L_k: the reference's result."""
    impl.function(SDPA, *BLOCKS)
    b = blocks(tiles, case.L_q, case.L_k)
    check.oracle(impl, SDPA, case.q, case.k, case.v, impl_only=b, **case.kwargs)


@claim("EFF-1")
@given(case=attention_cases(lengths=CHUNK_LENGTHS, batch=CHUNK_BATCH), tiles=BLOCK_CHOICES)
def test_chunked_weights_equal_naive_for_every_block_size(impl, case, tiles):
    """attention_weights by tiles equals the reference's P, and is exactly 0 on every hidden key."""
    impl.function("attention_weights", *BLOCKS)
    b = blocks(tiles, case.L_q, case.L_k)
    p = check.oracle(impl, "attention_weights", case.q, case.k, impl_only=b, **case.kwargs)
    hidden = ~np.broadcast_to(reference.visible(case.mask, case.is_causal, case.L_q, case.L_k), p.shape)
    check.exactly(impl, np.where(hidden, p, 0.0), np.zeros_like(p),
                  f"with block_q={b['block_q']}, block_k={b['block_k']}, the weight on every hidden key is exactly 0")


@claim("EFF-1")
@pytest.mark.parametrize("block_q, block_k", [(1, 1), (1, 4), (3, 7), (5, 1), (13, 10), (13, 64), (64, 3)],
                         ids=lambda b: str(b))
def test_every_block_size_gives_the_same_output(impl, block_q, block_k):
    """One padded, causal, L_q != L_k problem (13 queries, 10 keys: prime and even) under block sizes from 1 up."""
    impl.function(SDPA, *BLOCKS)
    q, k, v = normal(3, (2, 13, 5)), normal(4, (2, 10, 5)), normal(5, (2, 10, 3))
    pad = reference.padding_mask([10, 6], 10)[:, 0]  # (2, 1, 10): batch 1 has 4 pad keys
    out = check.oracle(impl, SDPA, q, k, v, mask=pad, is_causal=True, impl_only=dict(block_q=block_q, block_k=block_k))
    check.exactly(impl, out[:, :3], np.zeros((2, 3, 3)),
                  "causal with 13 queries and 10 keys: the first 3 queries see no key and output exactly 0")


@claim("EFF-1")
@given(seed=SEEDS, L_q=CHUNK_LENGTHS, L_k=CHUNK_LENGTHS, dead=st.integers(1, 3), tiles=BLOCK_CHOICES)
def test_fully_masked_rows_are_exactly_zero_in_every_block(impl, seed, L_q, L_k, dead, tiles):
    """Rows that see no key output exactly 0 whatever the tiling: no NaN from a block that is all hidden."""
    impl.function(SDPA, *BLOCKS)
    b = blocks(tiles, L_q, L_k)
    mask = random_mask(seed, (2, L_q, L_k), 0.5, dead_rows=dead)
    q, k, v = normal(seed, (2, L_q, 4)), normal(seed + 1, (2, L_k, 4)), normal(seed + 2, (2, L_k, 3)) + 3.0
    out = check.oracle(impl, SDPA, q, k, v, mask=mask, impl_only=b)
    dead_rows = ~mask.any(axis=-1)
    check.exactly(impl, out[dead_rows], np.zeros_like(out[dead_rows]),
                  f"with block_q={b['block_q']}, block_k={b['block_k']}, rows with no visible key output exactly 0")


@claim("EFF-1")
@settings(max_examples=10)
@given(case=mha_cases(lengths=CHUNK_LENGTHS, masked=None, causal=None), tiles=BLOCK_CHOICES)
def test_chunked_multi_head_attention_equals_naive(impl, case, tiles):
    """multi_head_attention with chunked heads equals the reference, masks and causal included."""
    impl.function("multi_head_attention", *BLOCKS)
    b = blocks(tiles, case.L_q, case.L_k)
    check.oracle(impl, "multi_head_attention", *case.args, impl_only=b, **case.kwargs)


# ================================================================================== EFF-2
EFF2_LENGTHS = (128, 256, 512, 1024)  # doubling: the growth exponent is fitted to the increments
CONTROL_LENGTHS = EFF2_LENGTHS  # the naive control: an L x L matrix at each
EFF2_BLOCK = 64
CHUNKED_MAX_EXPONENT = 1.4  # O(L) measures ~1.0
NAIVE_MIN_EXPONENT = 1.7  # O(L^2) measures ~2.0


def _naive_control(impl, q, k, v):
    """softmax(Q K^T / sqrt(d)) V written the textbook way in the implementation's own backend: an L x L matrix.

    On a CPU, float16 and bfloat16 are computed in float32: PyTorch's CPU matmul in float16 picks its kernel (and
    its working buffers, some fixed in size) by the matrices' size, so the peaks of the textbook formula itself
    grow irregularly from L = 128 to 1024 (fitted exponent 1.53 on one machine, 2.00 in float32). The control
    only shows that the meter sees an L x L matrix; the conversions it adds are of size L.
    """
    if impl.backend == "numpy":
        return reference.scaled_dot_product_attention(q, k, v)
    import torch

    if q.device.type == "cpu" and q.dtype in (torch.float16, torch.bfloat16):
        q, k, v = q.float(), k.float(), v.float()
    return torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1) @ v


def _peaks(impl, lengths, call):
    """Peak extra bytes of call(q, k, v) at each length, on (1, L, 32) inputs made before measuring.

    One unmeasured call first: a library's first call may import or initialise something once
    (torch.broadcast_shapes imports torch's symbolic-shape machinery), which is not the call's memory.
    """
    peaks = []
    for n, L in enumerate(lengths):
        q, k, v = (impl.native(normal(40 + i, (1, L, 32))) for i in range(3))
        if n == 0:
            call(q, k, v)
        peaks.append(memory.peak_bytes(lambda: call(q, k, v), impl.backend, impl.impl.device)[1])
    return peaks


def write_measurement(name: str, figures: dict) -> None:
    """Figures a test measured, as JSON under $MHA_SPEC_MEASUREMENTS (for the docs), when it is set."""
    folder = os.environ.get("MHA_SPEC_MEASUREMENTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.json").write_text(json.dumps(figures, indent=2))


@claim("EFF-2")
def test_chunked_peak_memory_grows_linearly(impl, record_property):
    """Peak extra memory at L = 128 .. 1024 (blocks of 64) grows like L^p with p < 1.4; a naive control's, p > 1.7.

    p is fitted to the growth of the peak between doubling lengths (memory.growth_exponent), so
    that the fixed cost of a tile does not pull it down; the exponent of the peaks themselves is
    reported too. Allocations, not times: tracemalloc for NumPy, the profiler's memory events for PyTorch
    on a CPU, max_memory_allocated on a GPU (spec_tests/harness/memory.py). The control (the
    textbook formula in the same backend, with its L x L matrix) shows that the meter sees
    quadratic growth where there is some.
    """
    fn = impl.function(SDPA, *BLOCKS)
    chunked = _peaks(impl, EFF2_LENGTHS, lambda q, k, v: fn(q, k, v, block_q=EFF2_BLOCK, block_k=EFF2_BLOCK))
    control = _peaks(impl, CONTROL_LENGTHS, lambda q, k, v: _naive_control(impl, q, k, v))
    p_chunked = memory.growth_exponent(EFF2_LENGTHS, chunked)
    p_control = memory.growth_exponent(CONTROL_LENGTHS, control)
    figures = {
        "impl": impl.name, "dtype": impl.dtype, "method": memory.method(impl.backend, impl.impl.device),
        "shape": "(1, L, 32)", "block": EFF2_BLOCK,
        "chunked": {"L": list(EFF2_LENGTHS), "peak_bytes": chunked, "growth_exponent": round(p_chunked, 3),
                    "peak_exponent": round(memory.fitted_exponent(EFF2_LENGTHS, chunked), 3)},
        "naive_control": {"L": list(CONTROL_LENGTHS), "peak_bytes": control, "growth_exponent": round(p_control, 3),
                          "peak_exponent": round(memory.fitted_exponent(CONTROL_LENGTHS, control), 3)},
    }
    record_property("EFF-2", figures)
    write_measurement(f"EFF-2-{impl.id}", figures)
    print(f"EFF-2 {impl.id}: chunked peak {chunked} bytes at L={list(EFF2_LENGTHS)}, growth exponent {p_chunked:.2f}; "
          f"naive control {control} at L={list(CONTROL_LENGTHS)}, growth exponent {p_control:.2f}")
    check.holds(impl, p_control > NAIVE_MIN_EXPONENT,
                "the memory meter sees the naive control's L x L matrix (its fitted exponent is near 2)",
                [f"control peaks {control} bytes at L = {list(CONTROL_LENGTHS)}: growth exponent {p_control:.2f}, "
                 f"expected > {NAIVE_MIN_EXPONENT}"])
    check.holds(impl, p_chunked < CHUNKED_MAX_EXPONENT,
                "chunked attention's peak memory grows as O(L), not O(L^2)",
                [f"peak extra bytes {chunked} at L = {list(EFF2_LENGTHS)} with blocks of {EFF2_BLOCK}: "
                 f"growth exponent {p_chunked:.2f}, expected < {CHUNKED_MAX_EXPONENT} (the naive control's is "
                 f"{p_control:.2f}); something of size L x L (or L x block-count) is being allocated"])


# ================================================================================== EFF-3
# FlashAttention's own tests use odd sizes on purpose (head dims 59, 111; lengths 113, 203),
# L_q < L_k and L_q > L_k. Flash kernels take no arbitrary mask: no mask or causal, here.
FLASH_CASES = [
    # (batch, L_q, L_k, d, is_causal)
    ((2, 3), 128, 128, 64, False),
    ((2, 3), 128, 128, 64, True),
    ((1, 2), 113, 203, 64, False),
    ((1, 2), 113, 203, 128, True),  # bottom-right causal: every query sees 91 keys or more
    ((1, 2), 203, 113, 32, True),  # L_q > L_k: the first 90 queries see no key and output exactly 0
    ((1, 4), 1, 239, 64, True),  # one decoding step against a cache of 239 keys
    ((2, 1), 97, 97, 59, False),  # a head dim no kernel tile fits
]


@claim("EFF-3")
@pytest.mark.parametrize("batch, L_q, L_k, d, is_causal", FLASH_CASES,
                         ids=[f"{'x'.join(map(str, b))}-{lq}x{lk}-d{d}{'-causal' if c else ''}"
                              for b, lq, lk, d, c in FLASH_CASES])
def test_flash_attention_matches_naive(impl, batch, L_q, L_k, d, is_causal):
    """At flash kernels' sizes, the result is the reference's within CONTRACT.md's rule for the dtype:
    in float16/bfloat16 at most FACTOR (4) times the error of the naive attention computed in that dtype, plus a floor."""
    case = AttentionCase(batch, L_q, L_k, d, d, seed=L_q + L_k + d, is_causal=is_causal)
    out = check.oracle(impl, SDPA, case.q, case.k, case.v, is_causal=is_causal)
    if is_causal and L_q > L_k:
        dead = L_q - L_k
        check.exactly(impl, out[..., :dead, :], np.zeros((*batch, dead, d)),
                      f"causal with L_q={L_q} > L_k={L_k}: the first {dead} queries see no key and output exactly 0")


@claim("EFF-3")
def test_long_sequence_matches_naive(impl):
    """1024 causal queries and keys in each of 2 padded batches (2M scores): an implementation's own blocks,
    whatever they are, cut it into many tiles (perhaps across threads); the result is still the reference's."""
    q, k, v = normal(21, (2, 1, 1024, 16)), normal(22, (2, 1, 1024, 16)), normal(23, (2, 1, 1024, 16))
    pad = reference.padding_mask([1024, 700], 1024)  # (2, 1, 1, 1024): batch 1 has 324 pad keys
    check.oracle(impl, SDPA, q, k, v, mask=pad, is_causal=True)


@claim("EFF-3")
@given(seed=SEEDS, L=st.sampled_from([64, 65, 127]), d=st.sampled_from([16, 64]), std=st.sampled_from([1.0, 3.0]))
@settings(max_examples=6)
def test_flash_attention_with_peaked_scores_matches_naive(impl, seed, L, d, std):
    """Large scores (q, k of std 3) make rows peaked: the online rescaling exp(m - m') must stay exact."""
    q, k, v = normal(seed, (1, 2, L, d), std), normal(seed + 1, (1, 2, L, d), std), normal(seed + 2, (1, 2, L, d))
    check.oracle(impl, SDPA, q, k, v, is_causal=True)


# ============================================================================ EFF-4, EFF-5
# Sliding window, Linformer, Performer and Reformer are the reference's algorithms (reference/): their
# verdict cannot depend on an implementation, so they are demonstrations, the suite's own tests:
# tests/demonstrations/test_efficient_variants.py (`pytest tests/demonstrations` runs them).


# ============================================================================ EFF-6, EFF-7
# A paged KV cache (reference/paged_cache.py; CONTRACT.md, "Paged KV caches"): the keys and values of
# every sequence in blocks of one pool, found through block_table (B, M); seq_lens (B,) tokens each.
#
#     paged_attention(q, k_cache, v_cache, block_table, seq_lens, is_causal=False, scale=None) -> out
#     q (B, H, L_q, d_k), k_cache (N, H_kv, S, d_k), v_cache (N, H_kv, S, d_v), out (B, H, L_q, d_v)
#
# Relations: a paged cache equals the contiguous one, wherever its blocks lie (EFF-6); decoding one
# query equals the last row of a causal prefill, and a batch equals each sequence alone, paged or
# left-padded (EFF-7). Without paged_attention these claims are "not implemented".
PAGED = "paged_attention"


@st.composite
def paged_cases(draw, min_len: int = 0, L_q=st.integers(1, 3)):
    """A contiguous cache k (B, H_kv, T, d_k), v (B, H_kv, T, d_v) holding seq_lens[b] tokens in row b,
    queries q (B, H, L_q, d_k) with H = groups x H_kv, and a block size S."""
    B, H_kv, groups = draw(st.integers(1, 3), label="B"), draw(st.integers(1, 2), label="H_kv"), draw(
        st.integers(1, 2), label="H / H_kv")
    L = draw(L_q, label="L_q")
    lens = draw(st.lists(st.integers(max(min_len, 0), 9), min_size=B, max_size=B), label="seq_lens")
    d, d_v, seed = draw(st.integers(1, 6), label="d_k"), draw(st.integers(1, 6), label="d_v"), draw(SEEDS, label="seed")
    S = draw(st.integers(1, 4), label="block size")
    T = max(max(lens), 1)
    k, v = normal(seed, (B, H_kv, T, d)), normal(seed + 1, (B, H_kv, T, d_v))
    q = normal(seed + 2, (B, H_kv * groups, L, d))
    return q, k, v, np.array(lens, dtype=np.int64), S


def _paged(k, v, lens, S, seed):
    """The contiguous cache as a paged one, its blocks at random places in a pool whose unused slots hold noise."""
    return reference.paged_cache.to_paged(k, v, lens, S, rng=np.random.default_rng(seed))


def _alone(q_b, k_b, v_b, n):
    """Sequence b's query heads (H, L_q, d) and its first n cached tokens, K/V heads repeated to H (GQA)."""
    H = q_b.shape[0]
    return q_b, reference.repeat_kv_heads(k_b[:, :n], H), reference.repeat_kv_heads(v_b[:, :n], H)


def _table(lens, S, pool):
    return f"seq_lens {lens.tolist()}, block size {S}, block_table {pool[2].tolist()}"


# ---------------------------------------------------------------------------------- EFF-6
@claim("EFF-6")
@given(case=paged_cases(), placement=SEEDS, is_causal=st.booleans())
def test_paged_attention_matches_the_reference(impl, case, placement, is_causal):
    """Attention read through the block table is the reference's: blocks in table order, cut at seq_lens[b]."""
    q, k, v, lens, S = case
    try:  # is_causal=False, the contract's default, is left to the implementation's default
        check.oracle(impl, PAGED, q, *_paged(k, v, lens, S, placement), lens, **({"is_causal": True} if is_causal else {}))
    except SpecFailure:  # an attention failing its own claims is charged to them: judged on its own attention then
        if not carried.failing_own_claims(impl, SDPA):
            raise
        _paged_equals_its_own_attention(impl, q, k, v, lens, S, placement, is_causal)


@claim("EFF-6")
@given(case=paged_cases(), placement=SEEDS, is_causal=st.booleans())
def test_a_paged_cache_equals_the_contiguous_one(impl, case, placement, is_causal):
    """Row b of paged attention equals the implementation's own attention over sequence b's first seq_lens[b]
    tokens, laid out contiguously; a sequence with nothing cached outputs exactly 0."""
    q, k, v, lens, S = case
    _paged_equals_its_own_attention(impl, q, k, v, lens, S, placement, is_causal)


def _paged_equals_its_own_attention(impl, q, k, v, lens, S, placement, is_causal):
    """Sequence b read through the block table against the implementation's attention over its tokens alone; when
    that attention fails its own claims (its masks: charged to them), its plain calls, row by row on the tokens each
    query sees, are a yardstick too (error carried forward: carried.row_by_row)."""
    pool = _paged(k, v, lens, S, placement)
    out = impl.paged_attention(q, *pool, lens, is_causal=is_causal)
    try:
        _each_sequence_alone(impl, out, q, k, v, lens, S, pool, is_causal)
    except SpecFailure:
        if not carried.failing_own_claims(impl, SDPA):
            raise
        if is_causal and carried.masking_charged(impl):  # its causal masking is the masks chapter's: passed as an
            try:  # explicit mask, as a paged kernel may build it, is its own attention too
                _each_sequence_alone(impl, out, q, k, v, lens, S, pool, is_causal, explicit=True)
                return
            except SpecFailure:
                pass
        rows = carried.row_by_row(impl, PAGED, (q, *pool, lens), {"is_causal": is_causal})
        check.close(impl, out, rows, f"the cache read through the block table ({_table(lens, S, pool)}, "
                    f"is_causal={is_causal}) equals your attention without a mask, one query row at a time on the "
                    "tokens it sees", size=tolerance.attention_output_size(v))


def _each_sequence_alone(impl, out, q, k, v, lens, S, pool, is_causal, explicit=False):
    """explicit: the causal mask passed as mask= (bottom-right) instead of is_causal."""
    for b, n in enumerate(lens.tolist()):
        if n == 0:
            check.exactly(impl, out[b], np.zeros_like(out[b]), f"sequence {b} has no cached token: it outputs exactly 0")
            continue
        causal = {"mask": reference.causal_mask(q.shape[-2], n)} if explicit and is_causal else {"is_causal": is_causal}
        alone = impl.scaled_dot_product_attention(*_alone(q[b], k[b], v[b], n), **causal)
        check.close(impl, out[b], alone, f"sequence {b} read through the block table ({_table(lens, S, pool)}) "
                    f"equals attention over its {n} tokens stored contiguously", size=tolerance.attention_output_size(v))


@claim("EFF-6")
@given(case=paged_cases(), first=SEEDS, second=SEEDS)
def test_where_the_blocks_lie_changes_nothing(impl, case, first, second):
    """The same cache in two pools (blocks at other places, other noise in the slots no token fills): same output."""
    q, k, v, lens, S = case
    one, two = _paged(k, v, lens, S, first), _paged(k, v, lens, S, second)
    check.close(impl, impl.paged_attention(q, *one, lens), impl.paged_attention(q, *two, lens),
                f"the cache with block_table {one[2].tolist()} and with {two[2].tolist()} ({lens.tolist()} tokens, "
                f"block size {S}) gives the same output", size=tolerance.attention_output_size(v))


@claim("EFF-6")
@given(case=paged_cases(min_len=1), placement=SEEDS)
def test_a_seq_len_the_table_cannot_hold_raises_value_error(impl, case, placement):
    """seq_lens[b] beyond the block table's M x S slots: ValueError naming seq_lens."""
    q, k, v, lens, S = case
    k_cache, v_cache, table = _paged(k, v, lens, S, placement)
    too_long = lens.copy()
    too_long[0] = table.shape[1] * S + 1
    check.raises_value_error(impl, PAGED, (q, k_cache, v_cache, table, too_long), {}, names=["seq_len"],
                             what=f"seq_lens {too_long.tolist()} with {table.shape[1]} blocks of {S} slots raises ValueError")


# ---------------------------------------------------------------------------------- EFF-7
@claim("EFF-7")
@given(case=paged_cases(min_len=3, L_q=st.integers(2, 3)), placement=SEEDS)
def test_decoding_equals_the_rows_of_a_causal_prefill(impl, case, placement):
    """Prefill row i (causal, bottom-right) equals decoding query i alone (L_q = 1, causal) when the cache held
    seq_lens - (L_q - 1 - i) tokens: the last row of the prefill is the next decode step."""
    q, k, v, lens, S = case
    k_cache, v_cache, table = _paged(k, v, lens, S, placement)
    L_q = q.shape[2]
    if carried.masking_charged(impl):  # its causal masking fails the masks chapter (charged there): prefill and
        check.oracle(impl, PAGED, q, k_cache, v_cache, table, lens, is_causal=True)  # each decode step are judged
        for i in range(L_q):  # on its own rows (carried.py, rule 4)
            check.oracle(impl, PAGED, q[:, :, i:i + 1], k_cache, v_cache, table, lens - (L_q - 1 - i), is_causal=True)
        return
    prefill = impl.paged_attention(q, k_cache, v_cache, table, lens, is_causal=True)
    for i in range(L_q):
        then = lens - (L_q - 1 - i)
        step = impl.paged_attention(q[:, :, i:i + 1], k_cache, v_cache, table, then, is_causal=True)
        check.close(impl, step[:, :, 0], prefill[:, :, i],
                    f"decoding query {i} over seq_lens {then.tolist()} equals row {i} of the causal prefill of "
                    f"{L_q} queries over seq_lens {lens.tolist()}", size=tolerance.attention_output_size(v))


@claim("EFF-7")
@given(case=paged_cases(), placement=SEEDS, is_causal=st.booleans())
def test_a_batch_equals_each_sequence_alone(impl, case, placement, is_causal):
    """Each row of a batch of sequences of different lengths equals that sequence run alone (B = 1)."""
    q, k, v, lens, S = case
    k_cache, v_cache, table = _paged(k, v, lens, S, placement)
    batch = impl.paged_attention(q, k_cache, v_cache, table, lens, is_causal=is_causal)
    for b in range(len(lens)):
        alone = impl.paged_attention(q[b:b + 1], k_cache, v_cache, table[b:b + 1], lens[b:b + 1], is_causal=is_causal)
        check.close(impl, batch[b], alone[0], f"sequence {b} of a batch with seq_lens {lens.tolist()} equals "
                    f"the same sequence alone", size=tolerance.attention_output_size(v))


@claim("EFF-7")
@given(case=paged_cases(), noise=SEEDS)
def test_a_left_padded_batch_equals_each_sequence_alone(impl, case, noise):
    """A contiguous cache with each sequence at the right end (left padding, pads of noise hidden by a padding
    mask), causal: row b equals sequence b alone, the mask and the bottom-right alignment agreeing."""
    q, k, v, lens, _ = case
    B, H_kv, T = k.shape[:3]
    H = q.shape[1]
    pad = np.random.default_rng(noise)
    k_left, v_left = pad.standard_normal(k.shape), pad.standard_normal(v.shape)
    for b, n in enumerate(lens.tolist()):
        k_left[b, :, T - n:], v_left[b, :, T - n:] = k[b, :, :n], v[b, :, :n]
    keep = np.arange(T) >= T - lens[:, None]  # (B, T): the last n_b slots hold sequence b
    args, keywords = (q, reference.repeat_kv_heads(k_left, H), reference.repeat_kv_heads(v_left, H)), \
        {"mask": keep[:, None, None, :], "is_causal": True}
    L_q = q.shape[-2]
    if carried.masking_charged(impl):  # its masking fails the masks chapter (charged there): the left-padded call,
        check.oracle(impl, SDPA, *args, mask=keep[:, None, None, :] & reference.causal_mask(L_q, T))  # its causal mask
        return  # explicit (an AND with is_causal is MASK-5's), is judged on its own rows (carried.py, rule 4)
    explicit = bool(carried.failing_own_claims(impl, SDPA))  # its masks (MASK-5's AND of a mask and is_causal, MASK-3's
    if explicit:  # alignment) are judged by their own claims: the relation alone here, each causal mask explicit
        batch = impl.scaled_dot_product_attention(*args, mask=keep[:, None, None, :] & reference.causal_mask(L_q, T))
    else:
        batch = check.oracle(impl, SDPA, *args, **keywords)
    for b, n in enumerate(lens.tolist()):
        if n:
            causal = {"mask": reference.causal_mask(L_q, n)} if explicit else {"is_causal": True}
            alone = impl.scaled_dot_product_attention(*_alone(q[b], k[b], v[b], n), **causal)
            live = slice(max(L_q - n, 0), None)  # queries that see a key (a dead row's 0 is MASK-4's)
            check.close(impl, batch[b][..., live, :], alone[..., live, :], f"sequence {b} left-padded to {T} "
                        f"(seq_lens {lens.tolist()}) equals its {n} tokens alone on the queries that see a key",
                        size=tolerance.attention_output_size(v))
