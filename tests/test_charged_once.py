"""Partial lower precision, charged once (spec_tests/harness/carried.py, tolerance.precision_step), and error carried
forward from a function's own formula to its masked calls.

Known bugs written the way outsiders write them do part of a float64 call in float32 or float16 (the scores, the
softmax, LayerNorm's statistics): each is found by PREC-3, on the fixed inputs every other claim decides by, and the
other claims judge it at the precision it reached and say so. A formula's error of half precision's size (a wrong
scale, a wrong epsilon) is no precision step: it moves smoothly with the input, rounding's does not. A formula bug in attention or multi-head attention is charged to SDPA-1 or
MHA-5, not again to the masks chapter; a masking bug still fails there.
"""

import numpy as np
import pytest

from spec_tests.harness import carried, check, context, feedback
from spec_tests.harness.context import CURRENT, current
from spec_tests.harness.loader import load
from spec_tests.harness.strategies import mha_weights
from spec_tests.harness.subject import Subject
from tests.helpers import MUTANTS_DIR, ROOT, missing_packages

PARTLY_FLOAT32 = {  # known bug -> the function whose fixed inputs show the float32 step
    "float32_scores_in_float64": "scaled_dot_product_attention",
    "float32_softmax_in_float64": "scaled_dot_product_attention",
    "float32_softmax_in_float64_torch": "scaled_dot_product_attention",
    "float32_layer_norm_stats_in_float64": "layer_norm",
    "computes_in_float32": "scaled_dot_product_attention",
}
CORRECT = ["numpy_fast", "torch_naive", "torch_sdpa", "numpy_chunked", "per_head_loop"]


def _subject(path, dtype="float64") -> Subject:
    if "torch" in path.read_text(encoding="utf-8") and missing_packages(["torch"]):
        pytest.skip("needs torch")
    return Subject(load(str(path)), dtype)


@pytest.fixture
def claims():
    """Run a check as a test of these claims would."""
    tokens = []

    def set_claims(*ids):
        tokens.append(CURRENT.set(context.TestInfo(nodeid=f"meta::charged_once::{'-'.join(ids)}", claims=ids)))

    yield set_claims
    for token in reversed(tokens):
        CURRENT.reset(token)


def _attention_inputs(seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 3))
    mask = rng.random((2, 3, 5)) < 0.6
    mask[..., 0] = True
    return q, k, v, mask


@pytest.mark.parametrize("name", sorted(PARTLY_FLOAT32))
def test_a_float32_step_inside_a_float64_call_is_found_on_the_fixed_inputs(name, claims):
    claims("MASK-1")
    subject = _subject(MUTANTS_DIR / f"{name}.py")
    fname = PARTLY_FLOAT32[name]
    evidence = carried.step_evidence(subject, fname)
    assert evidence is not None and evidence.step == "float32", name
    assert carried.PRECISION_CLAIM in carried.lower_verdict(subject, fname)
    assert carried.judged_dtype(subject) == "float32"


@pytest.mark.parametrize("name", CORRECT)
def test_correct_implementations_show_no_float32_step(name, claims):
    claims("MASK-1")
    subject = _subject(ROOT / "impls" / f"{name}.py")
    assert carried.judged_dtype(subject) == "float64"
    assert all(carried.step_evidence(subject, f) is None for f in carried.PRECISION_FUNCTIONS)


@pytest.mark.parametrize("name", ["layer_norm_eps_1e_6", "layer_norm_eps_outside_sqrt", "no_score_scaling"])
def test_a_small_error_of_another_kind_is_not_a_precision_step(name, claims):
    """eps = 1e-6 errs by about 1e-6, near float32's rule on some rows: it is the formula's bug, not precision."""
    claims("MASK-1")
    subject = _subject(MUTANTS_DIR / f"{name}.py")
    assert carried.judged_dtype(subject) == "float64"


def test_a_float16_softmax_inside_a_float64_call_is_found_and_judged_at_float16(claims):
    claims("MASK-1")
    subject = _subject(MUTANTS_DIR / "float16_softmax_in_float64.py")
    evidence = carried.step_evidence(subject, "scaled_dot_product_attention")
    assert evidence is not None and evidence.step == "float16"
    assert carried.lower_verdict(subject, "scaled_dot_product_attention") == (carried.PRECISION_CLAIM,)
    assert carried.judged_dtype(subject) == "float16"
    q, k, v, mask = _attention_inputs(1)
    check.oracle(subject, "scaled_dot_product_attention", q, k, v, mask=mask)
    assert "judged at float16 precision" in carried.note_for(current().nodeid)


@pytest.mark.parametrize("name", ["mha_scale_by_sqrt_d_model", "low_precision_mha_scale_by_sqrt_d_model",
                                  "float32_layer_norm_eps_too_large", "layer_norm_lecture_note_code"])
def test_a_formula_error_of_half_precisions_size_is_no_precision_step(name, claims):
    """A wrong scale or epsilon errs by 1e-3..1e-2, within bfloat16's rule: but it moves smoothly with the input."""
    claims("MASK-1")
    subject = _subject(MUTANTS_DIR / f"{name}.py")
    assert carried.judged_dtype(subject) == "float64"
    assert carried.PRECISION_CLAIM not in sum((carried.lower_verdict(subject, f) for f in carried.PRECISION_FUNCTIONS
                                               if subject.has(f)), ())


def test_the_step_found_is_the_most_precise_whose_rule_holds_the_error():
    allowed = {"float32": 1e-6, "float16": 1e-2, "bfloat16": 1e-1}.get
    assert carried.tolerance.precision_step(1e-7, 1e-12, allowed, 1.0) == "float32"
    assert carried.tolerance.precision_step(1e-3, 1e-12, allowed, 1.0) == "float16"
    assert carried.tolerance.precision_step(5e-2, 1e-12, allowed, 1.0) == "bfloat16"
    assert carried.tolerance.precision_step(1e-5, 1e-12, allowed, 1.0) is None  # neither float32's nor float16's
    assert carried.tolerance.precision_step(1e-13, 1e-12, allowed, 1.0) is None  # float64's
    assert carried.tolerance.precision_step(0.5, 1e-12, allowed, 1.0) is None  # beyond every rule: its own claim's


def test_prec_3_shows_the_values_of_the_smallest_input_that_shows_the_step(claims):
    claims("PREC-3")
    subject = _subject(MUTANTS_DIR / "float16_softmax_in_float64.py")
    evidence = carried.step_evidence(subject, "scaled_dot_product_attention")
    smallest = carried.smallest_step(subject, "scaled_dot_product_attention", evidence)
    assert smallest.step == "float16" and smallest.call.args[0].shape == (1, 1, 4)
    with pytest.raises(feedback.SpecFailure) as failure:
        check.compare(subject, smallest.seen, smallest.expected, smallest.bound, "PREC-3's check", [smallest.call],
                      inputs=True)
    text = str(failure.value)
    for name, value in zip(("q", "k", "v"), smallest.call.args):
        assert f"{name} = {feedback.fmt_array(value)[:20]}" in text, (name, text)


def test_other_claims_judge_a_float32_softmax_at_float32_and_say_so(claims):
    claims("MASK-1")
    subject = _subject(MUTANTS_DIR / "float32_softmax_in_float64.py")
    q, k, v, mask = _attention_inputs(1)
    check.oracle(subject, "scaled_dot_product_attention", q, k, v, mask=mask)
    assert "judged at float32 precision" in carried.note_for(current().nodeid)


def test_prec_3_itself_is_judged_at_float64(claims):
    claims("PREC-3")
    subject = _subject(MUTANTS_DIR / "float32_softmax_in_float64.py")
    q, k, v, _ = _attention_inputs(1)
    with pytest.raises(feedback.SpecFailure):
        check.oracle(subject, "scaled_dot_product_attention", q, k, v)


def test_float32_rounded_zeros_are_no_evidence_of_float32():
    assert not carried.float32_exact(np.zeros((2, 3)))
    assert carried.float32_exact(np.float32([0.1, 0.0]).astype(np.float64))


# ----------------------------------------------------------------- a formula's bug, not again the masks chapter's
def test_a_masked_call_of_a_wrong_formula_is_judged_against_its_own_plain_calls(claims):
    claims("MASK-1")
    subject = _subject(MUTANTS_DIR / "scale_after_softmax.py")
    q, k, v, mask = _attention_inputs(2)
    check.oracle(subject, "scaled_dot_product_attention", q, k, v, mask=mask)
    assert "one query row at a time" in carried.note_for(current().nodeid)


def test_the_formulas_own_chapter_still_fails_it(claims):
    claims("SDPA-1")
    subject = _subject(MUTANTS_DIR / "scale_after_softmax.py")
    q, k, v, mask = _attention_inputs(2)
    with pytest.raises(feedback.SpecFailure):
        check.oracle(subject, "scaled_dot_product_attention", q, k, v, mask=mask)


@pytest.mark.parametrize("name", ["mask_inverted", "padding_mask_wrong_axis", "mask_after_softmax", "causal_top_left"])
def test_a_masking_bug_still_fails_the_masks_chapter(name, claims):
    claims("MASK-1")
    subject = _subject(MUTANTS_DIR / f"{name}.py")
    q, k, v, mask = _attention_inputs(3)
    with pytest.raises(feedback.SpecFailure):
        check.oracle(subject, "scaled_dot_product_attention", q, k, v, mask=mask, is_causal=name == "causal_top_left")


def test_an_mha_that_adds_its_input_is_charged_to_mha_5_not_to_the_masks(claims):
    claims("MASK-5")
    subject = _subject(MUTANTS_DIR / "mha_adds_its_input.py")
    rng = np.random.default_rng(4)
    x, kv = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))
    padding = np.ones((2, 1, 1, 5), dtype=bool)
    padding[0, ..., 3:] = False
    check.oracle(subject, "multi_head_attention", x, kv, kv, mha_weights(5, 4, True), 2, mask=padding)
    assert "your multi_head_attention fails MHA-5" in carried.note_for(current().nodeid)
    claims("MHA-5")
    with pytest.raises(feedback.SpecFailure):
        check.oracle(subject, "multi_head_attention", x, kv, kv, mha_weights(5, 4, True), 2, mask=padding)


# ----------------------------------------------------------------- RoPE's angles in float32 (Hugging Face's LLaMA)
FLOAT32_ANGLES = '''"""RoPE whose angles m theta_i are computed in float32 whatever the input's dtype (as Hugging Face's LLaMA)."""
import numpy as np

BACKEND = "numpy"
DTYPES = ("float64", "float32")
CONTRACT = ("rotary_embedding",)


def rotary_embedding(x, positions, base=10000.0):
    d = x.shape[-1]
    theta = (float(base) ** (-np.arange(0, d, 2, dtype=np.float32) / d)).astype(np.float32)
    angle = np.asarray(positions).astype(np.float32)[..., None] * theta  # float32 angles
    cos, sin = np.cos(angle).astype(x.dtype), np.sin(angle).astype(x.dtype)
    out = np.empty(np.broadcast_shapes(x.shape, angle.shape[:-1] + (d,)), dtype=x.dtype)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
    return out
'''


def test_float32_angles_in_a_float64_rope_are_charged_to_prec_3_and_pe_4_judged_at_float32(tmp_path, claims):
    path = tmp_path / "float32_angles.py"
    path.write_text(FLOAT32_ANGLES, encoding="utf-8")
    subject = Subject(load(str(path)), "float64")
    claims("PE-4")
    evidence = carried.step_evidence(subject, "rotary_embedding")
    assert evidence is not None and evidence.step == "float32"
    assert carried.judged_dtype(subject) == "float32"
    rng = np.random.default_rng(5)
    x, positions = rng.standard_normal((2, 4, 8)), np.arange(4)
    check.oracle(subject, "rotary_embedding", x, positions)
    assert "judged at float32 precision" in carried.note_for(current().nodeid)
    claims("PREC-3")
    with pytest.raises(feedback.SpecFailure):
        check.oracle(subject, "rotary_embedding", x, positions)


# ----------------------------------------------------------------- a fixed input out of the implementation's scope
BIAS_FREE = '''"""Multi-head attention with bias-free projections, whose softmax runs in float32 (as x-transformers')."""
import numpy as np

import reference
from spec_tests import OutOfScope

BACKEND = "numpy"
CONTRACT = ("multi_head_attention",)


def _sdpa(q, k, v, mask=None, is_causal=False):
    scores = (q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])).astype(np.float32)  # the softmax in float32
    if is_causal:  # self-attention here: L_q = L_k
        scores = np.where(np.tril(np.ones(scores.shape[-2:], dtype=bool)), scores, -np.inf)
    if mask is not None:  # every row keeps a key in the inputs used here
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(q.dtype) @ v


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
    if any(weights.get(n) is not None for n in ("b_q", "b_k", "b_v", "b_o")):
        raise OutOfScope("bias-free projections")
    from reference.multi_head import multi_head_attention_from
    return multi_head_attention_from(query, key, value, weights, num_heads, mask=mask, is_causal=is_causal,
                                     scaled_dot_product_attention=_sdpa)
'''


def test_a_fixed_input_out_of_scope_is_no_failure_and_the_step_is_found_on_another(tmp_path, claims):
    path = tmp_path / "bias_free.py"
    path.write_text(BIAS_FREE, encoding="utf-8")
    subject = Subject(load(str(path)), "float64")
    claims("MHA-5")
    assert carried.lower_verdict(subject, "multi_head_attention") == (carried.PRECISION_CLAIM,)
    assert carried.judged_dtype(subject) == "float32"
    evidence = carried.step_evidence(subject, "multi_head_attention")
    assert evidence is not None and evidence.step == "float32"
    assert all(evidence.call.args[3].get(n) is None for n in ("b_q", "b_k", "b_v", "b_o"))


# ----------------------------------------------------------------- an SDPA formula bug, not again the later chapters'
def _paged_inputs(seed=6):
    import reference.paged_cache

    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((2, 2, 3, 4)), rng.standard_normal((2, 1, 5, 4)), rng.standard_normal((2, 1, 5, 3))
    lens = np.array([5, 3])
    return (q, *reference.paged_cache.to_paged(k, v, lens, 2, rng=rng), lens)


LATER_CHAPTERS = [  # (claim, function, keywords, a known bug of that chapter that must still fail it)
    ("MALG-1", "scaled_dot_product_attention", {"window_size": (1, 0)}, "window_off_by_one"),
    ("MALG-2", "scaled_dot_product_attention", {"q_segment_ids": np.array([0, 0, 1]),
                                                "kv_segment_ids": np.array([0, 0, 1, 1, 1])}, "document_sees_next_document"),
    ("EFF-6", "paged_attention", {"is_causal": True}, "paged_block_table_reversed"),
    ("LSE-1", "scaled_dot_product_attention", {"return_lse": True}, "lse_of_unscaled_scores"),
]


@pytest.mark.parametrize("claim, fname, keywords, bug", LATER_CHAPTERS, ids=[c[0] for c in LATER_CHAPTERS])
def test_a_later_chapters_call_of_a_wrong_sdpa_is_judged_against_its_own_plain_calls(claim, fname, keywords, bug,
                                                                                      claims):
    claims(claim)
    args = _paged_inputs() if fname == "paged_attention" else _attention_inputs(2)[:3]
    subject = _subject(MUTANTS_DIR / "scale_after_softmax.py")
    check.oracle(subject, fname, *args, **keywords)
    assert "one query row at a time" in carried.note_for(current().nodeid)
    with pytest.raises(feedback.SpecFailure):  # that chapter's own bug still fails its claim
        check.oracle(_subject(MUTANTS_DIR / f"{bug}.py"), fname, *args, **keywords)


def test_a_backward_pass_is_judged_on_the_weights_it_goes_with(claims):
    claims("GRAD-2")
    q, k, v, _ = _attention_inputs(3)
    dout = np.random.default_rng(7).standard_normal((2, 3, 3))
    subject = _subject(MUTANTS_DIR / "scale_after_softmax.py")
    check.oracle(subject, "scaled_dot_product_attention_backward", dout, q, k, v)
    assert carried.carried_here()
    assert "your attention_weights, which fails SDPA-1" in carried.note_for(current().nodeid)
    with pytest.raises(feedback.SpecFailure):  # a backward bug of its own still fails GRAD-2
        check.oracle(_subject(MUTANTS_DIR / "softmax_backward_elementwise.py"), "scaled_dot_product_attention_backward",
                     dout, q, k, v)


def test_a_claim_that_uses_attention_as_a_vehicle_takes_the_references_when_it_fails_its_own(claims):
    claims("RES-3")
    subject = _subject(MUTANTS_DIR / "scale_after_softmax.py")
    assert carried.own_or_reference(subject, "multi_head_attention") is carried.reference.multi_head_attention
    assert "judged with the reference's multi_head_attention" in carried.note_for(current().nodeid)
    correct = _subject(ROOT / "impls" / "numpy_fast.py")
    assert carried.own_or_reference(correct, "multi_head_attention") is not carried.reference.multi_head_attention
