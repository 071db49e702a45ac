"""Chapter: positional encodings (docs/positional.md). Claims PE-1 .. PE-5.

    PE[p, 2i] = sin(p / 10000^(2i/D)),   PE[p, 2i+1] = cos(p / 10000^(2i/D))      (lecture note 2 §5.2)
    rope(x, m): pair (x[2i], x[2i+1]) rotated by m · base^(-2i/d)                 (RoPE, PE-4)
    bias[i, j] = table[bucket(j - i)] added to the scores                         (T5, PE-5; ALiBi likewise)

sin and cos interleave (even columns sin, odd columns cos). Each column pair turns at angular
frequency ω_i = 10000^(-2i/D), so shifting by k positions is a rotation by k ω_i in every pair.
The function has no input array, so its precision is not the implementation's to choose: it is
compared at the most precise dtype the implementation declares (tolerance.required_dtype), and a
result returned in a less precise dtype fails PE-1 with a message that says so.
"""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import reference
from spec_tests.harness import carried, check, feature_rows, tolerance
from spec_tests.harness.arrays import KNOWN_FLOATS
from spec_tests.harness.strategies import HEAD_DIMS, SEEDS, normal

claim = pytest.mark.claim
PE = "sinusoidal_positional_encoding"
EVEN_D = st.integers(1, 64).map(lambda n: 2 * n)


def _pe(impl, length: int, d_model: int) -> tuple[np.ndarray, str]:
    """The encoding as float64, and the precision it is held to: the most precise dtype the implementation
    declares (a function without an input array does not choose its own slack by the dtype it returns)."""
    pe = impl.sinusoidal_positional_encoding(length, d_model)
    return pe, tolerance.required_dtype(impl.impl.dtypes)


def _returned_dtype(impl) -> str:
    seen = impl.history[-1].seen_dtype
    return seen if seen in KNOWN_FLOATS else "float64"


# ---------------------------------------------------------------------------------- PE-1
@claim("PE-1")
@given(length=st.integers(1, 300), d_model=EVEN_D)
@example(length=50, d_model=512)
def test_sinusoidal_values_follow_the_formula(impl, length, d_model):
    """Every value equals sin/cos(p / 10000^(2i/D)), sin in even columns, cos in odd ones."""
    pe, dtype = _pe(impl, length, d_model)
    returned = _returned_dtype(impl)
    check.holds(impl, not tolerance.less_precise(returned, dtype),
                f"sinusoidal_positional_encoding returns at least the precision of {dtype}",
                [f"it returned {returned}, but the implementation declares DTYPES = {tuple(impl.impl.dtypes)}: "
                 f"a function without an input array is held to the most precise of them, {dtype}",
                 f"return the encoding in {dtype} (or a more precise dtype)"], [pe])
    expected = reference.sinusoidal_positional_encoding(length, d_model)
    check.compare(impl, pe, expected, tolerance.positional_bound(dtype, expected, length, d_model),
                  f"sinusoidal_positional_encoding({length}, {d_model}) against the formula (held to {dtype})")


@claim("PE-1")
@given(d_model=EVEN_D)
def test_position_zero_is_zero_one_zero_one(impl, d_model):
    """pe[0] = [sin 0, cos 0, sin 0, cos 0, ...] = [0, 1, 0, 1, ...] exactly."""
    pe, _ = _pe(impl, 3, d_model)
    check.exactly(impl, pe[0], np.tile([0.0, 1.0], d_model // 2), "pe[0] == [0, 1, 0, 1, ...]")


@claim("PE-1")
@given(length=st.integers(1, 64), d_model=EVEN_D)
def test_output_shape_is_length_by_d_model(impl, length, d_model):
    pe, _ = _pe(impl, length, d_model)
    check.shape(impl, pe, (length, d_model), "sinusoidal_positional_encoding(length, d_model) is (length, d_model)")


# ---------------------------------------------------------------------------------- PE-2
@claim("PE-2")
@given(length=st.integers(1, 400), d_model=EVEN_D)
def test_values_lie_in_minus_one_to_one(impl, length, d_model):
    pe, _ = _pe(impl, length, d_model)
    check.holds(impl, bool((np.abs(pe) <= 1.0).all()), "every value lies in [-1, 1]",
                [f"largest |value| seen {np.abs(pe).max()!r}"], [pe])


@claim("PE-2")
@pytest.mark.parametrize("length, d_model", [(512, 64), (2048, 16), (1024, 128)])
def test_no_two_positions_share_an_encoding(impl, length, d_model):
    """Within a practical range, distinct positions have distinct encodings (distance > 0.5)."""
    pe, _ = _pe(impl, length, d_model)
    sq = (pe**2).sum(axis=1)
    dist2 = sq[:, None] + sq[None, :] - 2.0 * pe @ pe.T  # (length, length) squared distances
    np.fill_diagonal(dist2, np.inf)
    closest = float(np.sqrt(max(dist2.min(), 0.0)))
    i, j = np.unravel_index(int(np.argmin(dist2)), dist2.shape)
    check.holds(impl, closest > 0.5, f"every pair of the {length} positions is more than 0.5 apart",
                [f"positions {i} and {j} are only {closest:.3g} apart"], [pe])


# ---------------------------------------------------------------------------------- PE-3
@claim("PE-3")
@given(length=st.integers(2, 200), d_model=EVEN_D, k=st.integers(1, 50))
def test_shifting_by_k_is_a_fixed_rotation(impl, length, d_model, k):
    """pe[p + k] = R_k pe[p] for every p, with R_k block-diagonal: pair i rotated by the angle that takes pe[0] to pe[k]."""
    pe, dtype = _pe(impl, length + k, d_model)
    s0, c0 = pe[k, 0::2], pe[k, 1::2]  # (sin kω_i, cos kω_i), read off the encoding itself since pe[0] = (0, 1)
    sin_p, cos_p = pe[:length, 0::2], pe[:length, 1::2]
    rotated = np.empty((length, d_model))
    rotated[:, 0::2] = sin_p * c0 + cos_p * s0  # sin(a + b) = sin a cos b + cos a sin b
    rotated[:, 1::2] = cos_p * c0 - sin_p * s0  # cos(a + b) = cos a cos b - sin a sin b
    bound = tolerance.relation_bound(dtype, tolerance.angle_size(length + k))
    check.compare(impl, pe[k:k + length], rotated, bound,
                  f"pe[p + {k}] is pe[p] rotated pairwise by the angles of pe[{k}], the same for every p")


# ---------------------------------------------------------------------------------- PE-4
ROPE = "rotary_embedding"
PAIRS = st.integers(1, 8)  # d = 2 * pairs
POSITIONS = st.integers(0, 200)


@claim("PE-4")
@given(seed=SEEDS, batch=st.lists(st.integers(1, 3), max_size=2).map(tuple), L=st.integers(1, 9), pairs=PAIRS,
       start=POSITIONS, base=st.sampled_from([10000.0, 500.0]))
@example(seed=0, batch=(), L=4, pairs=4, start=0, base=10000.0)
def test_rotary_embedding_matches_oracle(impl, seed, batch, L, pairs, start, base):
    """rope(x, m)[2i] = x[2i] cos(m θ_i) - x[2i+1] sin(m θ_i), [2i+1] = x[2i] sin + x[2i+1] cos, θ_i = base^(-2i/d)."""
    x = normal(seed, (*batch, L, 2 * pairs))
    positions = np.arange(start, start + L)
    out = check.oracle(impl, ROPE, x, positions, base=base)
    check.shape(impl, out, x.shape, "rotary_embedding keeps the shape (..., L, d)")


@claim("PE-4")
@given(seed=SEEDS, L=st.integers(1, 9), pairs=PAIRS, data=st.data())
def test_rotary_embedding_takes_any_positions(impl, seed, L, pairs, data):
    """Positions need not be 0..L-1: any integers, one per row (a KV cache continues from its length)."""
    positions = np.array(data.draw(st.lists(POSITIONS, min_size=L, max_size=L), label="positions"))
    x = normal(seed, (2, L, 2 * pairs))
    check.oracle(impl, ROPE, x, positions)


@claim("PE-4")
@given(seed=SEEDS, L=st.integers(1, 9), pairs=PAIRS, start=POSITIONS)
def test_rotary_embedding_preserves_norms(impl, seed, L, pairs, start):
    """A rotation keeps lengths: |rope(x, m)| == |x| for every row."""
    x = normal(seed, (3, L, 2 * pairs))
    positions = np.arange(start, start + L)
    out = impl.rotary_embedding(x, positions)
    norms = np.linalg.norm(impl.round(x), axis=-1)
    check.close(impl, np.linalg.norm(out, axis=-1), norms, "|rope(x, m)| == |x| for every row",
                size=tolerance.rope_size(x, positions))


@claim("PE-4")
@given(seed=SEEDS, L=st.integers(1, 9), pairs=PAIRS)
def test_position_zero_is_the_identity(impl, seed, L, pairs):
    """rope(x, 0) == x exactly: every angle is 0, cos 0 = 1 and sin 0 = 0."""
    x = normal(seed, (2, L, 2 * pairs))
    out = impl.rotary_embedding(x, np.zeros(L, dtype=np.int64))
    check.exactly(impl, out, impl.round(x), "rotary_embedding(x, positions=0) == x")


@claim("PE-4")
@given(seed=SEEDS, pairs=PAIRS, m=st.lists(POSITIONS, min_size=1, max_size=6),
       n=st.lists(POSITIONS, min_size=1, max_size=6), shift=st.integers(1, 300))
@example(seed=1, pairs=4, m=[0, 1, 2], n=[5, 0, 2, 7], shift=100)
def test_rotated_scores_depend_only_on_the_offset(impl, seed, pairs, m, n, shift):
    """<rope(q, m), rope(k, n)> is unchanged when every position is shifted by the same s: only m - n counts."""
    m, n = np.array(m), np.array(n)
    L_q, L_k = len(m), len(n)
    q, k = normal(seed, (L_q, 2 * pairs)), normal(seed + 1, (L_k, 2 * pairs))
    scores = impl.rotary_embedding(q, m) @ impl.rotary_embedding(k, n).T  # (L_q, L_k), in float64 here
    shifted = impl.rotary_embedding(q, m + shift) @ impl.rotary_embedding(k, n + shift).T
    biggest = max(m.max(), n.max()) + shift
    size = tolerance.rope_scores_size(q, k, biggest)
    check.close(impl, shifted, scores,
                f"<rope(q, m), rope(k, n)> is unchanged when every position moves by {shift}", size=size)


@claim("PE-4")
@given(seed=SEEDS, L=st.integers(2, 9), pairs=PAIRS)
def test_scores_of_repeated_vectors_are_toeplitz(impl, seed, L, pairs):
    """One q and one k at every position 0..L-1: the score matrix S[i, j] = <rope(q, i), rope(k, j)> is constant along diagonals."""
    q, k = np.tile(normal(seed, (1, 2 * pairs)), (L, 1)), np.tile(normal(seed + 1, (1, 2 * pairs)), (L, 1))
    positions = np.arange(L)
    s = impl.rotary_embedding(q, positions) @ impl.rotary_embedding(k, positions).T  # (L, L)
    size = tolerance.rope_scores_size(q, k, L)
    check.close(impl, s[1:, 1:], s[:-1, :-1], "S[i + 1, j + 1] == S[i, j]: the scores depend on j - i only", size=size)


@claim("PE-4")
@given(seed=SEEDS, L=st.integers(1, 6), pairs=PAIRS, start=POSITIONS)
def test_half_split_layout_is_a_feature_permutation(impl, seed, L, pairs, start):
    """LLaMA's half-split RoPE (feature i pairs with i + d/2) is this interleaved RoPE on permuted features."""
    d = 2 * pairs
    x = normal(seed, (2, L, d))
    positions = np.arange(start, start + L)
    perm = reference.half_split_permutation(d)  # [0, d/2, 1, d/2 + 1, ...]
    seen = impl.rotary_embedding(x[..., perm], positions)[..., np.argsort(perm)]
    check.against(impl, seen, reference.rotary_embedding_half_split, (x, positions), {},
                  "rope(x[..., P], m)[..., P^-1] equals the half-split (rotate_half) layout, P = [0, d/2, 1, d/2+1, ...]")


@claim("PE-4")
@pytest.mark.parametrize("x_shape, positions_shape, names", [
    ((2, 3, 5), (3,), ("5",)),
    ((4, 7), (4,), ("7",)),
    ((2, 3, 4), (5,), ("(5,)",)),
])
def test_rotary_embedding_bad_input_raises(impl, x_shape, positions_shape, names):
    """An odd feature size cannot form pairs; positions must give one position per row."""
    check.raises_value_error(impl, ROPE, (normal(0, x_shape), np.zeros(positions_shape, dtype=np.int64)), {},
                             names=names)


# ---------------------------------------------------------------------------------- PE-5
T5 = "t5_relative_position_bucket"


@st.composite
def bucket_settings(draw):
    """(bidirectional, num_buckets, max_distance) with max_distance beyond the exact range."""
    bidirectional = draw(st.booleans(), label="bidirectional")
    num_buckets = draw(st.sampled_from([4, 8, 10, 16, 32, 64]), label="num_buckets")
    # beyond the exact range of either direction setting (num_buckets / 2 for causal), so log(max_distance / E) > 0
    max_distance = draw(st.integers(num_buckets // 2 + 1, 300), label="max_distance")
    return bidirectional, num_buckets, max_distance


def _bucket_at_boundary(n, bidirectional, num_buckets, max_distance) -> np.ndarray:
    """Where E + log(r / E) / log(max_distance / E) x (B - E) is an integer k in exact arithmetic (r = 10, 20, 80 at
    10 buckets, 160, causal: log 2 / log 32 x 5 = 1), floor() of its float value is k or k - 1 by one rounding:
    the bucket exact arithmetic gives, E + k, and the one float computations may give, E + k - 1, are both
    right. Returns the other of the two there (the one the float64 reference does not give), -1 elsewhere."""
    n = np.asarray(n, dtype=np.int64)
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    offset = np.where(n > 0, per_direction, 0) if bidirectional else np.zeros_like(n)
    r = np.abs(n) if bidirectional else np.maximum(-n, 0)
    exact = per_direction // 2
    with np.errstate(divide="ignore"):
        x = np.log(np.maximum(r, exact) / exact) / np.log(max_distance / exact) * (per_direction - exact)
    k = np.round(x)
    on_boundary = (r >= exact) & (k >= 1) & (np.abs(x - k) <= 1e-9 * np.maximum(k, 1.0)) & (exact + k <= per_direction - 1)
    ref = reference.t5_relative_position_bucket(n, bidirectional, num_buckets, max_distance)
    other = np.where(ref == offset + exact + k, offset + exact + k - 1, offset + exact + k)
    return np.where(on_boundary, other, -1)


def _buckets(impl, n, bidirectional=True, num_buckets=32, max_distance=128) -> np.ndarray:
    out = impl.t5_relative_position_bucket(np.asarray(n, dtype=np.int64), bidirectional=bidirectional,
                                           num_buckets=num_buckets, max_distance=max_distance)
    return np.asarray(out)


@claim("PE-5")
@given(settings=bucket_settings(), seed=SEEDS)
@example(settings=(True, 10, 50), seed=0)  # 5 buckets per direction: E = 5 // 2 = 2, not 2.5
def test_t5_buckets_match_oracle(impl, settings, seed):
    """bucket(j - i) equals the reference's for relative positions from -400 to 400, exactly (they are integers)."""
    bidirectional, num_buckets, max_distance = settings
    n = np.concatenate([np.arange(-40, 41), np.random.default_rng(seed).integers(-400, 401, 102)]).reshape(3, 61)
    seen = _buckets(impl, n, bidirectional, num_buckets, max_distance)
    expected = reference.t5_relative_position_bucket(n, bidirectional, num_buckets, max_distance)
    expected = np.where(seen == _bucket_at_boundary(n, bidirectional, num_buckets, max_distance), seen, expected)
    check.exactly(impl, seen, expected,
                  f"t5_relative_position_bucket(n, bidirectional={bidirectional}, num_buckets={num_buckets}, "
                  f"max_distance={max_distance}) equals the reference")


@claim("PE-5")
def test_t5_default_buckets_by_hand(impl):
    """Defaults (32 buckets, 128): 16 per direction, 0..7 exact, then 8 + floor(2 log2(r / 8)), capped at 15.

    r = 8 -> 8, 16 -> 10, 32 -> 12, 64 -> 14, 90 -> 14 (2 log2(90 / 8) = 6.98; with max_distance 127 it would be
    15), 128 and beyond -> 15; keys after the query add 16.
    Causal: 32 buckets for the past, 0..15 exact, 16 + floor(16 log(r/16) / log 8): 32 -> 21, 64 -> 26, 90 -> 29,
    127 -> 31.
    """
    r = np.array([0, 1, 7, 8, 16, 32, 64, 90, 127, 128, 1000])
    by_hand = np.array([0, 1, 7, 8, 10, 12, 14, 14, 15, 15, 15])

    def defaults(n, **kwargs):  # the contract's defaults, left to the implementation: no keyword but those given
        return np.asarray(impl.t5_relative_position_bucket(np.asarray(n, dtype=np.int64), **kwargs))

    check.exactly(impl, defaults(-r), by_hand, "buckets of keys r positions before the query (n = -r), "
                  "t5_relative_position_bucket(n) with its defaults")
    after = np.where(r > 0, by_hand + 16, 0)
    check.exactly(impl, defaults(r), after, "keys r positions after the query use the upper 16 buckets")
    causal = defaults(np.concatenate([-r, r[1:]]), bidirectional=False)
    # causal: all 32 buckets for the past, 0..15 exact, then 16 + floor(16 log(r / 16) / log 8)
    by_hand_causal = np.array([0, 1, 7, 8, 16, 21, 26, 29, 31, 31, 31])
    check.exactly(impl, causal, np.concatenate([by_hand_causal, np.zeros(len(r) - 1)]),
                  "causal (bidirectional=False): 32 buckets for the past, 16 of them exact; every future key -> 0")


@claim("PE-5")
@given(settings=bucket_settings())
def test_t5_small_distances_are_exact(impl, settings):
    """Below E = (buckets per direction) / 2, each distance has its own bucket: bucket(-r) = r."""
    bidirectional, num_buckets, max_distance = settings
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    r = np.arange(per_direction // 2)
    check.exactly(impl, _buckets(impl, -r, bidirectional, num_buckets, max_distance), r,
                  f"bucket(-r) == r for r < {per_direction // 2}")
    if bidirectional:
        check.exactly(impl, _buckets(impl, r[1:], bidirectional, num_buckets, max_distance), r[1:] + per_direction,
                      f"bucket(+r) == r + {per_direction} for 0 < r < {per_direction // 2}")


@claim("PE-5")
@given(settings=bucket_settings())
def test_t5_far_buckets_grow_logarithmically_up_to_max_distance(impl, settings):
    """Beyond the exact range buckets never decrease, doubling the distance adds about the same number of
    buckets, and every distance at or beyond max_distance shares the last bucket."""
    bidirectional, num_buckets, max_distance = settings
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    exact = per_direction // 2
    r = np.arange(0, 2 * max_distance + 10)
    b = _buckets(impl, -r, bidirectional, num_buckets, max_distance)
    check.holds(impl, bool((np.diff(b) >= 0).all()), "bucket(-r) never decreases as r grows",
                [f"buckets for r = 0..: {b[:60].astype(int).tolist()}"], [b])
    check.exactly(impl, b[max_distance:], np.full(len(r) - max_distance, per_direction - 1),
                  f"every r >= max_distance={max_distance} is in the last bucket {per_direction - 1}")
    check.holds(impl, bool(b[:max_distance].max() <= per_direction - 1), "buckets stay below the last one",
                arrays=[b])
    step = (per_direction - exact) * np.log(2) / np.log(max_distance / exact)  # buckets added per doubling
    rr = np.arange(exact, max_distance // 2)
    if rr.size:
        added = b[2 * rr] - b[rr]
        ok = bool((np.abs(added - step) <= 1.0 + 1e-9).all())
        check.holds(impl, ok, f"doubling a distance in [{exact}, {max_distance}) adds {step:.3g} buckets (within 1)",
                    [f"r = {rr.tolist()[:20]}", f"bucket(2r) - bucket(r) = {added.astype(int).tolist()[:20]}"], [b])


@claim("PE-5")
@given(settings=bucket_settings())
def test_t5_bidirectional_and_causal_directions(impl, settings):
    """Causal: every key after the query (n > 0) is bucket 0. Bidirectional: n > 0 uses the upper half,
    n <= 0 the lower half, and the lower half is the causal bucketing with half the buckets."""
    _, num_buckets, max_distance = settings
    n = np.arange(-2 * max_distance, 2 * max_distance + 1)
    causal = _buckets(impl, n, False, num_buckets, max_distance)
    check.exactly(impl, causal[n > 0], np.zeros(int((n > 0).sum())), "causal: keys after the query all get bucket 0")
    bi = _buckets(impl, n, True, num_buckets, max_distance)
    half = num_buckets // 2
    check.holds(impl, bool((bi[n > 0] >= half).all() and (bi[n <= 0] < half).all()),
                f"bidirectional: n > 0 in buckets {half}..{num_buckets - 1}, n <= 0 in 0..{half - 1}", arrays=[bi])
    past_as_causal = _buckets(impl, n[n <= 0], False, half, max_distance)
    check.exactly(impl, bi[n <= 0], past_as_causal,
                  f"bidirectional buckets of n <= 0 equal causal buckets with num_buckets={half}")


# -- the additive bias= of scaled_dot_product_attention, which carries T5 and ALiBi biases

@claim("PE-5")
@given(seed=SEEDS, heads=st.integers(1, 4), L_q=st.integers(1, 9), L_k=st.integers(1, 9), d=HEAD_DIMS,
       is_causal=st.booleans(), kind=st.sampled_from(["t5", "alibi", "random"]))
def test_sdpa_with_a_position_bias_matches_oracle(impl, seed, heads, L_q, L_k, d, is_causal, kind):
    """softmax(Q K^T / sqrt(d_k) + bias) V with a (H, L_q, L_k) bias equals the reference, with and without is_causal."""
    L_k = L_q if is_causal else L_k  # square when causal: the causal alignment is MASK-3's subject, not this claim's
    if kind == "t5":
        bias = reference.t5_bias(normal(seed + 5, (heads, 32)), L_q, L_k, bidirectional=not is_causal)
    elif kind == "alibi":
        bias = reference.alibi_bias(heads, L_q, L_k)
    else:
        bias = normal(seed + 5, (heads, L_q, L_k))
    q, k, v = normal(seed, (2, heads, L_q, d)), normal(seed + 1, (2, heads, L_k, d)), normal(seed + 2, (2, heads, L_k, d))
    feature_rows.oracle(impl, "scaled_dot_product_attention", q, k, v, is_causal=is_causal, bias=bias)


@claim("PE-5")
@given(seed=SEEDS, L_q=st.integers(1, 7), L_k=st.integers(1, 7), d=HEAD_DIMS, masked=st.booleans())
def test_sdpa_bias_broadcasts_and_combines_with_the_mask(impl, seed, L_q, L_k, d, masked):
    """A bias of shape (L_q, L_k) broadcasts over (B, H); a -inf entry hides its key exactly like mask=False.

    Every query keeps a key that neither the mask nor the bias hides: a row that sees no key, however it is
    hidden, is MASK-4's (test_fully_masked_rows_stay_zero_with_a_bias, test_rows_a_bias_hides_output_exactly_zero)."""
    q, k, v = normal(seed, (2, 3, L_q, d)), normal(seed + 1, (2, 3, L_k, d)), normal(seed + 2, (2, 3, L_k, d)) + 3.0
    bias = normal(seed + 3, (L_q, L_k))
    keep = np.arange(L_k) == np.random.default_rng(seed + 6).integers(0, L_k, (L_q, 1))  # (L_q, L_k): a key a row
    hide = (np.random.default_rng(seed + 4).random((L_q, L_k)) < 0.3) & ~keep
    mask = (np.random.default_rng(seed + 5).random((2, 1, L_q, L_k)) < 0.7) | keep if masked else None
    out = feature_rows.oracle(impl, "scaled_dot_product_attention", q, k, v, mask=mask,
                              bias=np.where(hide, -np.inf, bias))
    if carried.masking_charged(impl):  # a -inf bias hides as its masking does, which fails the masks chapter: the
        return  # bias is judged above, on its own rows (charged there: carried.py, rule 4)
    both = ~hide if mask is None else mask & ~hide
    check.close(impl, out, impl.scaled_dot_product_attention(q, k, v, mask=both, bias=bias),
                "bias=-inf at a key gives the same output as mask=False there", size=tolerance.attention_output_size(v))
    p = impl.attention_weights(q, k, mask=mask, bias=np.where(hide, -np.inf, bias))
    on_hidden = np.where(np.broadcast_to(hide, p.shape), p, 0.0)
    check.exactly(impl, on_hidden, np.zeros_like(p), "the weight on a key with bias -inf is exactly 0")


@claim("PE-5")
@given(seed=SEEDS, heads=st.integers(1, 9), L=st.integers(1, 9), d=HEAD_DIMS)
def test_alibi_bias_is_relative(impl, seed, heads, L, d):
    """ALiBi's causal bias s_h (j - i) gives the same attention as s_h · j (BLOOM's form): softmax ignores a
    constant per row, so only j - i matters. Its slopes are 2^(-8(h+1)/H) for H a power of two."""
    q, k, v = normal(seed, (heads, L, d)), normal(seed + 1, (heads, L, d)), normal(seed + 2, (heads, L, d))
    relative = reference.alibi_bias(heads, L, L)  # (H, L, L) = s_h (j - i)
    absolute = reference.alibi_slopes(heads)[:, None, None] * np.arange(L)[None, None, :]  # s_h j, the same per row
    a = feature_rows.oracle(impl, "scaled_dot_product_attention", q, k, v, is_causal=True, bias=relative)
    if carried.masking_charged(impl):  # its causal masking fails the masks chapter (charged there): each form of
        feature_rows.oracle(impl, "scaled_dot_product_attention", q, k, v, is_causal=True, bias=absolute)  # on its rows
        return
    b = impl.scaled_dot_product_attention(q, k, v, is_causal=True, bias=absolute)
    size = tolerance.attention_size(q, k, v, bias=absolute)
    check.close(impl, b, a, "ALiBi with s_h · j equals ALiBi with s_h · (j - i) under a causal mask", size=size)
    if heads & (heads - 1) == 0:
        check.exactly(impl, reference.alibi_slopes(heads), 2.0 ** (-8.0 * np.arange(1, heads + 1) / heads),
                      f"ALiBi slopes for {heads} heads")
