"""Buggy implementations written the way outsiders write them (from scratch, not from impls/mutants/), and
the measurement of what the known-bug diagnosis says about them.

Each outsider is a small NumPy module built here by `module(name)`: a plain, correct implementation of
the attention, multi-head and LayerNorm functions with one bug planted the way it shows up in code found
elsewhere. `OUTSIDERS[name]` gives the function it is judged on, the small failing inputs a shrinker would
reach, and `right`: the known bugs (impls/mutants/ stems) that are the same bug, so naming one of them is
right; naming any other is wrong; naming none is safe.

    python -m tests.diagnosis_outsiders      # right / none / wrong over every outsider, and each one's lines
"""

from __future__ import annotations

import os
import types
from dataclasses import dataclass

import numpy as np

from spec_tests.harness import check, context, diagnosis, feedback  # noqa: F401 - diagnosis registers itself
from spec_tests.harness.context import CURRENT
from spec_tests.harness.loader import Implementation
from spec_tests.harness.subject import Subject


# ------------------------------------------------------------------------------------ a correct core
def softmax(s, axis=-1):
    """exp(s - max) / sum, with a row that sees nothing giving zeros (the contract's dead row)."""
    top = np.max(s, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(s - top)
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def causal(L_q, L_k):
    """Bottom-right aligned: query i sees key j when j <= i + L_k - L_q."""
    return np.arange(L_k)[None, :] <= np.arange(L_q)[:, None] + (L_k - L_q)


def scores(q, k, scale):
    d_k = q.shape[-1]
    scale = float(1.0 / np.sqrt(d_k)) if scale is None else float(scale)
    return (q @ np.swapaxes(k, -1, -2)) * np.asarray(scale, dtype=q.dtype)


def visible(s, mask, is_causal, causal_fn=causal):
    vis = np.ones(s.shape, dtype=bool)
    if is_causal:
        vis = vis & causal_fn(*s.shape[-2:])
    if mask is not None:
        vis = vis & np.asarray(mask, dtype=bool)
    return vis


def attention_weights(q, k, mask=None, is_causal=False, scale=None):
    s = scores(q, k, scale)
    return softmax(np.where(visible(s, mask, is_causal), s, -np.inf))


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    return attention_weights(q, k, mask=mask, is_causal=is_causal, scale=scale) @ v


def split_heads(x, num_heads):
    *lead, L, D = x.shape
    return np.swapaxes(x.reshape(*lead, L, num_heads, D // num_heads), -2, -3)


def merge_heads(heads):
    *lead, H, L, d = heads.shape
    return np.swapaxes(heads, -2, -3).reshape(*lead, L, H * d)


def project(x, w, b):
    y = x @ w
    return y if b is None else y + b


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
    q = split_heads(project(query, weights["w_q"], weights.get("b_q")), num_heads)
    k = split_heads(project(key, weights["w_k"], weights.get("b_k")), num_heads)
    v = split_heads(project(value, weights["w_v"], weights.get("b_v")), num_heads)
    heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
    return project(merge_heads(heads), weights["w_o"], weights.get("b_o"))


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


CORE = dict(attention_weights=attention_weights, scaled_dot_product_attention=scaled_dot_product_attention,
            split_heads=split_heads, merge_heads=merge_heads, multi_head_attention=multi_head_attention,
            layer_norm=layer_norm)


# ------------------------------------------------------------------------------------- the outsiders
def chunked_skips_block_early(q, k, v, mask=None, is_causal=False, scale=None, block=2):
    """A tiled kernel whose causal skip drops the diagonal key block, not only the blocks above it."""
    L_q, L_k = q.shape[-2], k.shape[-2]
    out = np.zeros(q.shape[:-1] + v.shape[-1:], dtype=q.dtype)
    for qs in range(0, L_q, block):
        rows = slice(qs, min(qs + block, L_q))
        s = scores(q[..., rows, :], k, scale)
        vis = visible(np.zeros(s.shape), None if mask is None else np.broadcast_to(
            mask, q.shape[:-1] + (L_k,))[..., rows, :], False)
        if is_causal:
            vis = vis & causal(L_q, L_k)[rows]
            for ks in range(0, L_k, block):
                if ks >= qs + (L_k - L_q):  # BUG: skips the diagonal block too (correct: ks > last row's limit)
                    vis[..., ks:ks + block] = False
        out[..., rows, :] = softmax(np.where(vis, s, -np.inf)) @ v
    return out


def weights_ignore_causal(q, k, mask=None, is_causal=False, scale=None):
    return attention_weights(q, k, mask=mask, scale=scale)  # BUG: is_causal dropped


def sdpa_scale_from_d_v(q, k, v, mask=None, is_causal=False, scale=None):
    s = scale if scale is not None else 1.0 / np.sqrt(v.shape[-1])  # BUG: d_v, not d_k
    return attention_weights(q, k, mask=mask, is_causal=is_causal, scale=s) @ v


def weights_unscaled(q, k, mask=None, is_causal=False, scale=None):
    return attention_weights(q, k, mask=mask, is_causal=is_causal, scale=1.0 if scale is None else scale)


def sdpa_unscaled(q, k, v, mask=None, is_causal=False, scale=None):
    return weights_unscaled(q, k, mask=mask, is_causal=is_causal, scale=scale) @ v


def weights_over_queries(q, k, mask=None, is_causal=False, scale=None):
    s = scores(q, k, scale)
    return softmax(np.where(visible(s, mask, is_causal), s, -np.inf), axis=-2)


def weights_true_hides(q, k, mask=None, is_causal=False, scale=None):
    return attention_weights(q, k, mask=None if mask is None else ~np.asarray(mask, bool), is_causal=is_causal,
                             scale=scale)


def weights_fill_minus_1e9(q, k, mask=None, is_causal=False, scale=None):
    s = scores(q, k, scale)
    return softmax(np.where(visible(s, mask, is_causal), s, -1e9))


def weights_future_visible(q, k, mask=None, is_causal=False, scale=None):
    s = scores(q, k, scale)
    upper = lambda L_q, L_k: np.arange(L_k)[None, :] >= np.arange(L_q)[:, None]  # noqa: E731 - BUG: triu
    return softmax(np.where(visible(s, mask, is_causal, upper), s, -np.inf))


def sdpa_scale_after_softmax(q, k, v, mask=None, is_causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2)
    p = softmax(np.where(visible(s, mask, is_causal), s, -np.inf))
    return (p / np.sqrt(q.shape[-1])) @ v  # BUG: the scale after the softmax


def sdpa_keys_as_values(q, k, v, mask=None, is_causal=False, scale=None):
    return attention_weights(q, k, mask=mask, is_causal=is_causal, scale=scale) @ k  # BUG: k for v


def weights_top_left(q, k, mask=None, is_causal=False, scale=None):
    s = scores(q, k, scale)
    top_left = lambda L_q, L_k: np.arange(L_k)[None, :] <= np.arange(L_q)[:, None]  # noqa: E731
    return softmax(np.where(visible(s, mask, is_causal, top_left), s, -np.inf))


def weights_without_max(q, k, mask=None, is_causal=False, scale=None):
    s = scores(q, k, scale)
    e = np.where(visible(s, mask, is_causal), np.exp(s), 0.0)  # BUG: no row maximum
    return e / e.sum(axis=-1, keepdims=True)


def weights_mask_added(q, k, mask=None, is_causal=False, scale=None):
    s = scores(q, k, scale)
    if mask is not None:
        s = s + np.asarray(mask, dtype=s.dtype)  # BUG: the boolean mask added to the scores
    return softmax(np.where(visible(s, None, is_causal), s, -np.inf))


def mha_adds_input(query, key, value, weights, num_heads, mask=None, is_causal=False):
    return query + multi_head_attention(query, key, value, weights, num_heads, mask, is_causal)


def mha_no_output_projection(query, key, value, weights, num_heads, mask=None, is_causal=False):
    q, k, v = (split_heads(project(x, weights[w], weights.get(b)), num_heads)
               for x, w, b in ((query, "w_q", "b_q"), (key, "w_k", "b_k"), (value, "w_v", "b_v")))
    return merge_heads(scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal))


def mha_scale_by_d_model(query, key, value, weights, num_heads, mask=None, is_causal=False):
    q, k, v = (split_heads(project(x, weights[w], weights.get(b)), num_heads)
               for x, w, b in ((query, "w_q", "b_q"), (key, "w_k", "b_k"), (value, "w_v", "b_v")))
    heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, scale=1 / np.sqrt(query.shape[-1]))
    return project(merge_heads(heads), weights["w_o"], weights.get("b_o"))


def ln_unbiased_variance(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(x.var(axis=-1, ddof=1, keepdims=True) + eps) + beta


def ln_eps_outside(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mean) / (x.std(axis=-1, keepdims=True) + eps) + beta


def ln_gamma_beta_swapped(x, gamma, beta, eps=1e-5):
    return layer_norm(x, beta, gamma, eps)


def ln_all_axes(x, gamma, beta, eps=1e-5):
    return gamma * (x - x.mean()) / np.sqrt(x.var() + eps) + beta


def ln_returns_normalised(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + eps)  # BUG: gamma, beta dropped


# ------------------------------------------------------------------------------------------- inputs
def _rng(seed):
    return np.random.default_rng(seed)


def qkv(L_q, L_k, d_k=1, d_v=1, seed=0, big=1.0, with_v=True):
    r = _rng(seed)
    q, k, v = big * r.standard_normal((L_q, d_k)), r.standard_normal((L_k, d_k)), r.standard_normal((L_k, d_v))
    return (q, k, v) if with_v else (q, k)


def mha_input(B=1, L=2, D=2, H=1, seed=0, bias=True):
    r = _rng(seed)
    x = r.standard_normal((B, L, D))
    w = {n: r.standard_normal((D, D)) / np.sqrt(D) for n in ("w_q", "w_k", "w_v", "w_o")}
    if bias:
        w.update({n: 0.1 * r.standard_normal(D) for n in ("b_q", "b_k", "b_v", "b_o")})
    return (x, x, x, w, H)


def ln_input(L=2, D=2, seed=0):
    r = _rng(seed)
    return (r.standard_normal((L, D)) * 2 + 1, 1 + 0.5 * r.standard_normal(D), 0.3 * r.standard_normal(D))


def _mask(L_q, L_k, hidden):
    m = np.ones((L_q, L_k), dtype=bool)
    for i, j in hidden:
        m[i, j] = False
    return m


@dataclass
class Outsider:
    fname: str
    fn: object
    cases: list  # [(args, kwargs, claim)]
    right: frozenset = frozenset()


def _sdpa_and_weights(fn_w, cases, right=()):
    """An attention-weights bug shows in both functions: judged on each, with the output built from it."""
    sdpa = lambda q, k, v, **kw: fn_w(q, k, **kw) @ v  # noqa: E731
    return [Outsider("attention_weights", fn_w, [((a[0], a[1]), kw, c) for a, kw, c in cases], frozenset(right)),
            Outsider("scaled_dot_product_attention", sdpa, cases, frozenset(right))]


def _outsiders() -> dict:
    causal_cases = [(qkv(2, 2), {"is_causal": True}, "MASK-2"), (qkv(3, 3, 2, 2, seed=1), {"is_causal": True}, "MASK-2")]
    out = {
        "chunked_skips_block_early": [Outsider("scaled_dot_product_attention", chunked_skips_block_early, [
            (qkv(1, 1), {"is_causal": True}, "MASK-2"), (qkv(3, 3, seed=2), {"is_causal": True}, "MASK-2")])],
        "sdpa_scale_from_d_v": [Outsider("scaled_dot_product_attention", sdpa_scale_from_d_v, [
            (qkv(1, 2, 2, 1), {}, "SDPA-4"), (qkv(2, 2, 3, 1, seed=3), {}, "SDPA-1")], frozenset({"scale_from_d_v"}))],
        "sdpa_scale_after_softmax": [Outsider("scaled_dot_product_attention", sdpa_scale_after_softmax, [
            (qkv(1, 1, 2, 1), {}, "SDPA-1"), (qkv(2, 3, 2, 1, seed=4), {}, "SDPA-4")], frozenset({"scale_after_softmax"}))],
        "sdpa_keys_as_values": [Outsider("scaled_dot_product_attention", sdpa_keys_as_values, [
            (qkv(1, 1), {}, "SDPA-1"), (qkv(2, 2, 2, 2, seed=5), {}, "SDPA-1")])],
        "mha_adds_input": [Outsider("multi_head_attention", mha_adds_input, [
            (mha_input(), {}, "MHA-5"), (mha_input(L=3, D=4, H=2, seed=1), {}, "MHA-5")], frozenset({"mha_adds_its_input"}))],
        "mha_no_output_projection": [Outsider("multi_head_attention", mha_no_output_projection, [
            (mha_input(), {}, "MHA-5"), (mha_input(L=3, D=4, H=2, seed=2), {}, "MHA-5")],
            frozenset({"no_output_projection"}))],
        "mha_scale_by_d_model": [Outsider("multi_head_attention", mha_scale_by_d_model, [
            (mha_input(D=4, H=2), {}, "MHA-5"), (mha_input(L=3, D=4, H=4, seed=3), {}, "MHA-5")],
            frozenset({"mha_scale_by_sqrt_d_model"}))],
        "ln_unbiased_variance": [Outsider("layer_norm", ln_unbiased_variance, [
            (ln_input(), {}, "LN-1"), (ln_input(3, 4, seed=1), {}, "LN-1")], frozenset({"layer_norm_unbiased_variance"}))],
        "ln_eps_outside": [Outsider("layer_norm", ln_eps_outside, [
            (ln_input(), {}, "LN-1"), (ln_input(2, 3, seed=2), {}, "LN-1")], frozenset({"layer_norm_eps_outside_sqrt"}))],
        "ln_gamma_beta_swapped": [Outsider("layer_norm", ln_gamma_beta_swapped, [
            (ln_input(), {}, "LN-3"), (ln_input(2, 3, seed=3), {}, "LN-3")], frozenset({"layer_norm_gamma_beta_swapped"}))],
        "ln_all_axes": [Outsider("layer_norm", ln_all_axes, [
            (ln_input(), {}, "LN-4"), (ln_input(3, 2, seed=4), {}, "LN-4")], frozenset({"layer_norm_over_all_axes"}))],
        "ln_returns_normalised": [Outsider("layer_norm", ln_returns_normalised, [
            (ln_input(), {}, "LN-3"), (ln_input(2, 4, seed=5), {}, "LN-3")])],
    }
    out["weights_ignore_causal"] = _sdpa_and_weights(weights_ignore_causal, causal_cases)
    out["weights_unscaled"] = _sdpa_and_weights(weights_unscaled, [
        (qkv(1, 2, 2, 1), {}, "SDPA-4"), (qkv(2, 3, 3, 2, seed=6), {}, "SDPA-4")], {"no_score_scaling"})
    out["weights_over_queries"] = _sdpa_and_weights(weights_over_queries, [
        (qkv(2, 1), {}, "SDPA-2"), (qkv(2, 3, 2, 2, seed=7), {}, "SDPA-2")], {"softmax_over_query_axis"})
    out["weights_true_hides"] = _sdpa_and_weights(weights_true_hides, [
        (qkv(1, 2), {"mask": _mask(1, 2, [(0, 1)])}, "MASK-1"),
        (qkv(2, 3, 2, 1, seed=8), {"mask": _mask(2, 3, [(0, 2), (1, 0)])}, "MASK-1")], {"mask_inverted"})
    out["weights_fill_minus_1e9"] = _sdpa_and_weights(weights_fill_minus_1e9, [
        (qkv(1, 1), {"mask": _mask(1, 1, [(0, 0)])}, "MASK-4"),
        (qkv(2, 2, seed=9), {"mask": _mask(2, 2, [(1, 0), (1, 1)])}, "MASK-4")], {"fully_masked_rows_mean_of_v"})
    out["weights_future_visible"] = _sdpa_and_weights(weights_future_visible, causal_cases)
    out["weights_top_left"] = _sdpa_and_weights(weights_top_left, [
        (qkv(1, 2), {"is_causal": True}, "MASK-3"), (qkv(2, 4, 2, 1, seed=10), {"is_causal": True}, "MASK-3")],
        {"causal_top_left"})
    out["weights_without_max"] = _sdpa_and_weights(weights_without_max, [
        (qkv(1, 2, big=2000.0), {}, "SDPA-5"), (qkv(2, 2, 2, 1, seed=11, big=3000.0), {}, "SDPA-5")],
        {"softmax_no_max_subtraction"})
    out["weights_mask_added"] = _sdpa_and_weights(weights_mask_added, [
        (qkv(1, 2), {"mask": _mask(1, 2, [(0, 1)])}, "MASK-1"),
        (qkv(2, 3, seed=12), {"mask": _mask(2, 3, [(0, 0)])}, "MASK-1")])
    return out


OUTSIDERS = _outsiders()


def module(name: str, fname: str, fn) -> types.ModuleType:
    """The outsider as an implementation module: the correct core with `fname` replaced by the buggy one
    (an attention-weights bug also reaches the output, and a scaled_dot_product_attention bug the heads)."""
    mod = types.ModuleType(f"outsider_{name}_{fname}")
    mod.BACKEND, mod.DTYPES = "numpy", ("float64", "float32")
    mod.__dict__.update(CORE)
    setattr(mod, fname, fn)
    return mod


def subject(name: str, fname: str, fn, dtype: str = "float64") -> Subject:
    mod = module(name, fname, fn)
    return Subject(Implementation(name=mod.__name__, spec=mod.__name__, module=mod), dtype)


# ------------------------------------------------------------------------------------------ judging
def causes_for(name: str, outsider: Outsider, dtype: str = "float64") -> list[tuple[str, str]]:
    """(claim, the 'likely cause' text or '') of each failing case of one outsider."""
    os.environ.setdefault("MHA_SPEC_NO_REPRO", "1")
    found = []
    for n, (args, kwargs, claim) in enumerate(outsider.cases):
        subj = subject(name, outsider.fname, outsider.fn, dtype)
        token = CURRENT.set(context.TestInfo(nodeid=f"outsider::{name}::{outsider.fname}::{n}", claims=(claim,)))
        try:
            check.oracle(subj, outsider.fname, *args, **kwargs)
            found.append((claim, "passed"))
        except feedback.SpecFailure as failure:
            text = str(failure)
            line = next((ln.strip() for ln in text.splitlines() if ln.strip().startswith("likely cause:")), "")
            found.append((claim, line.removeprefix("likely cause:").strip()))
        finally:
            CURRENT.reset(token)
    return found


def named(text: str) -> str | None:
    """The known bug a likely-cause line names (its stem), or None."""
    from impls.mutants import catalogue

    for bug in catalogue():
        if bug.bug and bug.bug in text:
            return bug.name
    return None


def verdict(outsider: Outsider, lines: list[tuple[str, str]]) -> str:
    """'wrong' when any line names a bug outside `right`, else 'right' when one names a bug, else 'none'."""
    names = [named(t) for _, t in lines]
    if any(n is not None and n not in outsider.right for n in names):
        return "wrong"
    return "right" if any(n is not None for n in names) else "none"


def measure(verbose: bool = True) -> dict:
    """right / none / wrong over every (outsider, function judged), and over the outsiders (a bug is wrong
    when any of its functions gets a wrong name, right when one gets a right name and none a wrong one)."""
    counts = {"right": 0, "none": 0, "wrong": 0}
    bugs = {"right": 0, "none": 0, "wrong": 0}
    for name, variants in OUTSIDERS.items():
        verdicts = []
        for outsider in variants:
            lines = causes_for(name, outsider)
            verdicts.append(verdict(outsider, lines))
            counts[verdicts[-1]] += 1
            if verbose:
                print(f"{verdicts[-1]:5} {name} [{outsider.fname}]")
                for claim, text in lines:
                    print(f"        {claim}: {text[:160]}")
        bugs["wrong" if "wrong" in verdicts else "right" if "right" in verdicts else "none"] += 1
    return {"by function judged": counts, "by bug": bugs}


if __name__ == "__main__":
    print(measure())
