"""Error carried forward from the implementation's masking (spec_tests/harness/carried.py, rule 4) and from a result
of the wrong shape.

A masking bug (hidden scores multiplied by 0, not set to -inf) fails the masks chapter. A later chapter's claim called
with a mask (the log-sum-exp, softcap, a bias) is then judged on the implementation's own calls without the mask, one
query row at a time on the keys the row sees: the masking is not charged again, and a bug of the later concept still
fails. The mask algebra's claims judge a window by the implementation's own masking: a window off by one still fails.
"""

import numpy as np
import pytest

from spec_tests.harness import carried, check, context, feedback
from spec_tests.harness.context import CURRENT
from spec_tests.harness.loader import load
from spec_tests.harness.strategies import mha_weights
from spec_tests.harness.subject import Subject

SDPA = "scaled_dot_product_attention"

MULTIPLIES = '''"""Attention whose masking multiplies the scores by the mask{extra}."""
import numpy as np

BACKEND = "numpy"
CONTRACT = ("scaled_dot_product_attention", "attention_weights")


def _visible(L_q, L_k, mask, is_causal, window_size):
    vis = np.ones((L_q, L_k), dtype=bool)
    i, j = np.arange(L_q)[:, None] + (L_k - L_q), np.arange(L_k)[None, :]
    if is_causal:
        vis = vis & (j <= i)
    if window_size is not None:
        left, right = window_size
        left = L_k if left is None else left{window_shift}
        right = L_k if right is None else right
        vis = vis & (j - i >= -left) & (j - i <= right)
    return vis if mask is None else vis & np.asarray(mask, dtype=bool)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, window_size=None, return_lse=False):
    q, k = np.asarray(q), np.asarray(k)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    s = s * _visible(q.shape[-2], k.shape[-2], mask, is_causal, window_size)  # the bug: 0, not -inf
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    p = e / e.sum(axis=-1, keepdims=True)
    lse = (m + np.log(e.sum(axis=-1, keepdims=True)))[..., 0]{lse_shift}
    return (p, lse) if return_lse else p


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, window_size=None,
                                 return_lse=False):
    p, lse = attention_weights(q, k, mask, is_causal, scale, window_size, return_lse=True)
    out = p @ np.asarray(v)
    return (out, lse) if return_lse else out
'''


def _write(tmp_path, name, extra="", lse_shift="", window_shift=""):
    path = tmp_path / f"{name}.py"
    path.write_text(MULTIPLIES.format(extra=extra, lse_shift=lse_shift, window_shift=window_shift), encoding="utf-8")
    return Subject(load(str(path)), "float64")


@pytest.fixture
def claims():
    tokens = []

    def set_claims(*ids):
        tokens.append(CURRENT.set(context.TestInfo(nodeid=f"meta::masking_carried::{'-'.join(ids)}", claims=ids)))

    yield set_claims
    for token in reversed(tokens):
        CURRENT.reset(token)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 3))
    mask = rng.random((2, 3, 5)) < 0.6
    mask[..., 0] = True
    return q, k, v, mask


def test_a_masking_bug_fails_the_masks_chapter(tmp_path, claims):
    subject = _write(tmp_path, "multiplies")
    claims("MASK-1")
    assert "MASK-1" in carried.masking_fails(subject)
    q, k, v, mask = _inputs()
    with pytest.raises(feedback.SpecFailure):
        check.oracle(subject, SDPA, q, k, v, mask=mask)


def test_a_later_claim_judges_its_masked_call_without_the_mask(tmp_path, claims):
    subject = _write(tmp_path, "multiplies")
    claims("LSE-1")
    q, k, v, mask = _inputs()
    check.oracle(subject, SDPA, q, k, v, mask=mask, return_lse=True)  # no failure: the masking is MASK-1's
    assert "without the mask" in carried.note_for(context.current().nodeid)


def test_a_bug_of_the_later_concept_still_fails_with_a_masking_bug(tmp_path, claims):
    subject = _write(tmp_path, "multiplies_lse_off", extra=" and whose lse is off by 1", lse_shift=" + 1.0")
    claims("LSE-1")
    q, k, v, mask = _inputs()
    with pytest.raises(feedback.SpecFailure):
        check.oracle(subject, SDPA, q, k, v, mask=mask, return_lse=True)


def test_a_window_is_judged_by_the_implementations_own_masking(tmp_path, claims):
    q, k, v, _ = _inputs()
    claims("MALG-1")
    right = _write(tmp_path, "multiplies_window")
    check.oracle(right, SDPA, q, k, v, window_size=(1, 0))  # the window picks the right keys: its masking is MASK-1's
    off = _write(tmp_path, "multiplies_window_off", extra=" and a window one key too wide", window_shift=" + 1")
    with pytest.raises(feedback.SpecFailure):
        check.oracle(off, SDPA, q, k, v, window_size=(1, 0))


UNMERGED = '''"""Multi-head attention that returns its heads unmerged, (B, H, L, d_k)."""
import numpy as np

import reference

BACKEND = "numpy"
CONTRACT = ("multi_head_attention",)


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
    q, k, v = (reference.split_heads(x @ weights[w], num_heads) for x, w in ((query, "w_q"), (key, "w_k"),
                                                                           (value, "w_v")))
    return reference.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
'''


def test_a_result_of_the_wrong_shape_is_charged_to_its_own_chapter(tmp_path, claims):
    path = tmp_path / "unmerged.py"
    path.write_text(UNMERGED, encoding="utf-8")
    subject = Subject(load(str(path)), "float64")
    x = np.random.default_rng(0).standard_normal((2, 3, 8))
    w = mha_weights(0, 8, False)
    claims("MHA-1")  # its own chapter: judged, and fails
    with pytest.raises(feedback.SpecFailure):
        check.oracle(subject, "multi_head_attention", x, x, x, w, 2)
    claims("VAR-4")  # another chapter's claim that calls it: not applicable, with the reason
    with pytest.raises(pytest.skip.Exception, match="wrong shape"):
        subject.multi_head_attention(x, x, x, w, 2)


# ------------------------------------------------------------------------------------- the default scale (rule 5)
def _scaled(tmp_path, name, default_scale, lse_shift=""):
    path = tmp_path / f"{name}.py"
    path.write_text(f'''"""Attention whose default scale is {default_scale}."""
import numpy as np

BACKEND = "numpy"
CONTRACT = ("scaled_dot_product_attention",)


def scaled_dot_product_attention(q, k, v, scale=None, return_lse=False):
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    scale = {default_scale} if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    out = e / e.sum(axis=-1, keepdims=True) @ v
    lse = (m + np.log(e.sum(axis=-1, keepdims=True)))[..., 0]{lse_shift}
    return (out, lse) if return_lse else out
''', encoding="utf-8")
    return Subject(load(str(path)), "float64")


def test_a_wrong_default_scale_is_charged_to_its_own_claim_only(tmp_path, claims):
    from_d_v = _scaled(tmp_path, "from_d_v", "1.0 / np.sqrt(v.shape[-1])")
    assert carried.default_scale_fails(from_d_v)
    q, k, v, _ = _inputs()
    claims("LSE-1")  # a later claim leaving the scale to the default: judged given it explicitly
    check.oracle(from_d_v, SDPA, q, k, v, return_lse=True)
    assert "scale=1/sqrt(d_k) given explicitly" in carried.note_for(context.current().nodeid)
    claims("SDPA-4")  # the scale's own chapter still fails it
    with pytest.raises(feedback.SpecFailure):
        check.oracle(from_d_v, SDPA, q, k, v)


def test_a_later_bug_still_fails_with_a_wrong_default_scale(tmp_path, claims):
    both = _scaled(tmp_path, "from_d_v_lse_off", "1.0 / np.sqrt(v.shape[-1])", lse_shift=" + 1.0")
    q, k, v, _ = _inputs()
    claims("LSE-1")
    with pytest.raises(feedback.SpecFailure):
        check.oracle(both, SDPA, q, k, v, return_lse=True)


def test_a_right_default_scale_is_not_a_scale_bug(tmp_path):
    assert not carried.default_scale_fails(_scaled(tmp_path, "right", "1.0 / np.sqrt(q.shape[-1])"))
