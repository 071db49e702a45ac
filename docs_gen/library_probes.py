"""The questions users ask about attention libraries, each asked of every adapter (adapters/) on the smallest
input that shows the answer, in float64. Deterministic: the same library versions give the same answers,
so `python -m docs_gen.libraries --check` can tell a stale page.

Each probe returns the values seen (rounded for the page), or what was raised, or "out of scope: ..." when
the adapter declares the input outside what the library can express. Inputs are built so that the
possible answers differ in a number a reader can check by hand: q = k = 0 gives every visible key the
same weight, so the output is the mean of the visible rows of v, and v = [[1], [3]] tells which keys
were seen (1: key 0 alone, 3: key 1 alone, 2: both).
"""

from __future__ import annotations

import functools
import importlib

import numpy as np

import reference
from spec_tests.harness.scope import OutOfScope

V2 = np.array([[1.0], [3.0]])  # (L_k=2, d_v=1): the output names the keys seen


def _native(impl, x):
    if isinstance(x, dict):
        return {k: _native(impl, v) for k, v in x.items()}
    if impl.BACKEND == "torch" and isinstance(x, np.ndarray):
        import torch

        return torch.from_numpy(x)
    return x


def _through_mha(impl, q, k, v, mask=None, is_causal=False):
    """Attention through multi-head attention with one head and identity projections (W = 1 for D = 1):
    how a module with multi-head attention only answers the attention questions. Where the question's keys
    are 0 (every score 0), the keys are the values and W_K = 0 instead, which gives the same scores: a module
    that projects keys and values from one input (torchtune, x-transformers) answers too."""
    one = np.ones((1, 1))
    w = {"w_q": one, "w_k": one, "w_v": one, "w_o": one}
    if not np.any(k):
        k, w["w_k"] = v, np.zeros((1, 1))
    m = None if mask is None else mask[None, None]  # (1, 1, L_q, L_k)
    return impl.multi_head_attention(*(_native(impl, a[None]) for a in (q, k, v)), _native(impl, w), 1,
                                     mask=_native(impl, m), is_causal=is_causal)


def _numpy(y):
    if hasattr(y, "detach"):
        y = y.detach().numpy()
    return np.asarray(y, dtype=np.float64)


def _fmt(a) -> str:
    a = np.asarray(a, dtype=np.float64).round(6) + 0.0  # no -0
    return np.array2string(a.reshape(-1), separator=", ", precision=6, suppress_small=False)


def _call(impl, fname, *args, **kwargs) -> str:
    fn = getattr(impl, fname, None)
    if fn is None and fname == "scaled_dot_product_attention" and hasattr(impl, "multi_head_attention"):
        fn = functools.partial(_through_mha, impl)
    elif fn is None:
        return "no such function"
    else:
        args, kwargs = tuple(_native(impl, a) for a in args), {k: _native(impl, v) for k, v in kwargs.items()}
    try:
        out = fn(*args, **kwargs)
    except OutOfScope as exc:
        return f"out of scope: {exc.reason}"
    except Exception as exc:  # noqa: BLE001 - what a library raises is an answer
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return f"raises {type(exc).__name__}: {first[:90]}"
    return _fmt(_numpy(out))


def _zeros(L):
    return np.zeros((L, 1))


def dead_rows(impl) -> str:
    """One query, two keys, both hidden: the contract's 0, the mean of v (2), or NaN."""
    return _call(impl, "scaled_dot_product_attention", _zeros(1), _zeros(2), V2, mask=np.array([[False, False]]))


def causal_alignment(impl) -> str:
    """One query, two keys, is_causal: bottom-right (the contract) sees both keys (2); top-left sees key 0 (1)."""
    return _call(impl, "scaled_dot_product_attention", _zeros(1), _zeros(2), V2, is_causal=True)


def mask_with_causal(impl) -> str:
    """Two queries, two keys; the mask hides key 1 from query 1, causal hides key 1 from query 0.
    AND (the contract): [1, 1]; the mask replaces causal: [2, 1]; causal ignores the mask: [1, 2]."""
    mask = np.array([[True, True], [True, False]])
    return _call(impl, "scaled_dot_product_attention", _zeros(2), _zeros(2), V2, mask=mask, is_causal=True)


def mask_polarity(impl) -> str:
    """mask [[True, False]]: True = may attend (the contract) sees key 0 (1); the opposite polarity, key 1 (3)."""
    return _call(impl, "scaled_dot_product_attention", _zeros(1), _zeros(2), V2, mask=np.array([[True, False]]))


def float_mask(impl) -> str:
    """A float 0/1 mask [[1., 0.]]: the contract raises ValueError; a library may add it to the scores
    (1.537883) or read it as keep/hide (1)."""
    return _call(impl, "scaled_dot_product_attention", _zeros(1), _zeros(2), V2, mask=np.array([[1.0, 0.0]]))


def _gqa_case():
    """H = 4 query heads, G = 2 K/V heads, D = 4 (d_k = 1), one token pair; distinct heads."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 4))
    w = {"w_q": rng.standard_normal((4, 4)), "w_k": rng.standard_normal((4, 2)),
         "w_v": rng.standard_normal((4, 2)), "w_o": rng.standard_normal((4, 4))}
    return x, w


def gqa_mapping(impl) -> str:
    """Which K/V head query head h reads, with H = 4 and G = 2: h // 2 (the contract: consecutive query
    heads share one) or h % 2 (interleaved)."""
    if not hasattr(impl, "multi_head_attention"):
        return "no multi-head attention"
    x, w = _gqa_case()
    seen = _call(impl, "multi_head_attention", x, x, x, w, 4, num_kv_heads=2)
    if not seen.startswith("["):
        return "no grouped K/V heads (num_kv_heads)" if "num_kv_heads" in seen else seen
    out = _numpy(impl.multi_head_attention(*(_native(impl, a) for a in (x, x, x)), _native(impl, w), 4,
                                           num_kv_heads=2))
    grouped = reference.multi_head_attention(x, x, x, w, 4, num_kv_heads=2)
    order = [0, 2, 1, 3]  # query heads reordered so that h // 2 of the new order is h % 2 of the old
    w2 = dict(w, w_q=w["w_q"][:, order], w_o=w["w_o"][order, :])
    interleaved = reference.multi_head_attention(x, x, x, w2, 4, num_kv_heads=2)
    if np.allclose(out, grouped, rtol=1e-6, atol=1e-9):
        return "h // (H/G): consecutive query heads share a K/V head"
    if np.allclose(out, interleaved, rtol=1e-6, atol=1e-9):
        return "h % G: interleaved"
    return f"neither mapping: {_fmt(out)}"


def float64_precision(impl) -> str:
    """The largest relative error in float64 against the float64 reference on a 4 x 4 x 1 input: about
    1e-16 when the library computes in float64, about 1e-8 when some step runs in float32 (d = 1, so that a
module with multi-head attention only answers it through one head of identity projections)."""
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((4, 1)) for _ in range(3))
    fn = getattr(impl, "scaled_dot_product_attention", None)
    if fn is None and not hasattr(impl, "multi_head_attention"):
        return "no such function"
    if fn is None:
        v = k  # through multi-head attention, keys and values one input (what every such module takes)
    try:
        out = _numpy(fn(*(_native(impl, a) for a in (q, k, v))) if fn else _through_mha(impl, q, k, v)[0])
    except OutOfScope as exc:
        return f"out of scope: {exc.reason}"
    except Exception as exc:  # noqa: BLE001
        return f"raises {type(exc).__name__}"
    expected = reference.scaled_dot_product_attention(q, k, v)
    err = float(np.abs(out - expected).max() / np.abs(expected).max())
    return f"{err:.1e} ({'float64 throughout' if err < 1e-12 else 'float32 inside float64'})"


def bad_input(impl) -> str:
    """q and k with different feature sizes (3 and 4): the contract raises ValueError naming both."""
    rng = np.random.default_rng(2)
    return _call(impl, "scaled_dot_product_attention", rng.standard_normal((2, 3)), rng.standard_normal((2, 4)),
                 rng.standard_normal((2, 1)))


# question id -> (title, the function, the claim it bears on, the contract's answer)
QUESTIONS = {
    "dead-rows": ("What does a query that sees no key return?", dead_rows, "MASK-4", "[0.]"),
    "causal-alignment": ("Which way is causal aligned when L_q != L_k?", causal_alignment, "MASK-3",
                         "[2.] (bottom-right: the one query is the last position and sees both keys)"),
    "mask-with-causal": ("A mask together with causal: AND, or does one replace the other?", mask_with_causal,
                         "MASK-5", "[1., 1.] (AND)"),
    "mask-polarity": ("Does True in a boolean mask mean keep or hide?", mask_polarity, "MASK-1",
                      "[1.] (True = may attend)"),
    "float-mask": ("Is a float mask a bias, a keep/hide mask, or an error?", float_mask, "ERR-1",
                   "ValueError (a mask is boolean; a bias is the separate `bias=`)"),
    "gqa-mapping": ("How does GQA map query heads to K/V heads?", gqa_mapping, "MHA-9",
                    "h // (H/G): consecutive query heads share a K/V head"),
    "float64": ("Is float64 input computed in float64?", float64_precision, "PREC-3",
                "about 1e-16 (float64 throughout)"),
    "bad-input": ("What does bad input raise?", bad_input, "ERR-1", "ValueError naming 3 and 4"),
}


def probe(adapter: str) -> dict[str, str]:
    """Every question's answer for one adapter (adapters/<adapter>.py); {} when its library is missing."""
    try:
        impl = importlib.import_module(f"adapters.{adapter}")
    except ImportError:
        return {}
    return {qid: fn(impl) for qid, (_, fn, _, _) in QUESTIONS.items()}
