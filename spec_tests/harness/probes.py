"""Further inputs that tell known bugs apart: the diagnosis asks them before it names a cause.

A minimal failing input is small on purpose, and small inputs hide differences: with d_v = 1 a scale
taken from d_v is no scale at all; with L = 2 an off-by-one causal mask sees everything, like no
causal mask; with L = 1 a kernel that skips its diagonal block looks like a mask that hides the
diagonal. So, for the function of the failing call, `probes(call, subject)` draws a bounded set of
larger inputs that separate such look-alikes, deterministically:

    attention   (B, H) = (2, 3) leading axes; (L_q, L_k, d_k, d_v) = (5, 5, 3, 2), (3, 6, 2, 4), (6, 3, 4, 1),
                (4, 4, 1, 3): square and L_q != L_k both ways, d_k != d_v; the call's own flags (causal or
                not, a mask or not, with a dead row when the call had one), then causal and mask toggled;
                a call that hides keys also gets the first of these with scores of tens of thousands (float64
                and float32), where a finite additive fill (-1e4) and a removed key part
    multi-head  B = 2, (D, H) = (6, 3), (6, 2), (8, 4): several heads, d_k = D / H != H; self- and
                cross-attention (L_q != L_k); the call's biases, mask and causal flag (and num_kv_heads)
    layer_norm  (3, 5) and (2, 3, 4) rows with an offset and a spread; (3, 5) rows of a small spread with eps = 0.5
    heads       split (2, 5, 6) into 3 and 2 heads, merge (2, 3, 5, 2)
    batched     the failing input itself, stacked with a nearby copy along a new batch axis
    every call  two more of its own shapes: its values each moved by a twentieth of their row's spread
                (an offset, a large score, a sign kept), and fresh ones
    poisoned    a call with NaN or inf in several arrays: once per array, with only that array's kept

Every array is small (at most a few hundred elements), so a probe costs what a test's call costs. The
call's other keywords (scale, softcap, window_size, block sizes, ...) are kept as given; a keyword the
implementation does not take is left out, and a probe whose input the call's keywords do not fit (segment
ids) is not drawn. A call made on native arrays (a dtype, in-place or determinism check) is probed
natively, so those behaviours can show again.
"""

from __future__ import annotations

from copy import copy

import numpy as np

from spec_tests.harness import arrays

SEED = 20240611
ATTENTION = ("scaled_dot_product_attention", "attention_weights")
ATTENTION_SHAPES = ((5, 5, 3, 2), (3, 6, 2, 4), (6, 3, 4, 1), (4, 4, 1, 3))
LEAD = (2, 3)  # batch, heads
MHA_SHAPES = ((6, 3), (6, 2), (8, 4))  # (D, H)
SHAPE_FREE = ("mask", "bias", "is_causal")  # keywords a probe of new shapes redraws (and sinks, per head)


def _with(call, args, kwargs, native: bool = False):
    c = copy(call)
    c.args, c.kwargs, c.native, c.after = tuple(args), dict(kwargs), native, None
    return c


def _visible(rng, shape, dead_row: bool) -> np.ndarray:
    """A random (..., L_q, L_k) mask with a visible key in every row, also under a causal mask (each query's
    last causal key, bottom-right aligned, is visible), and one fully hidden row when asked."""
    m = rng.random(shape) < 0.6
    L_q, L_k = shape[-2:]
    rows = np.arange(L_q)
    m[..., rows, np.clip(rows + L_k - L_q, 0, L_k - 1)] = True
    if dead_row:
        m[(0,) * (len(shape) - 2) + (shape[-2] // 2,)] = False
    return m


def _has_dead_row(mask) -> bool:
    m = np.asarray(mask)
    return m.dtype == np.bool_ and m.ndim >= 1 and m.shape[-1] > 0 and bool((~m.any(axis=-1)).any())


def _flags(subject, fname, kwargs) -> list[tuple[bool, bool]]:
    """(causal, masked) of the call, then each toggled where the implementation takes the keyword."""
    causal, masked = bool(kwargs.get("is_causal")), isinstance(kwargs.get("mask"), np.ndarray)
    out = [(causal, masked)]
    if subject.has(fname, "is_causal"):
        out.append((not causal, masked))
    if subject.has(fname, "mask"):
        out.append((causal, not masked))
    return out


def _attention(rng, call, subject) -> list:
    kept = {k: v for k, v in call.kwargs.items() if k not in SHAPE_FREE}
    sinks = kept.pop("sinks", None)
    segments = [kept.pop(k, None) is not None for k in ("q_segment_ids", "kv_segment_ids")]
    if any(isinstance(v, np.ndarray) for v in kept.values()) or (sinks is not None and np.ndim(sinks) != 1) or \
            any(np.ndim(call.kwargs[k]) != 1 for k, on in zip(("q_segment_ids", "kv_segment_ids"), segments) if on):
        return []  # batched segment ids are shaped by the call: only its own shapes, batched or with new values
    dead = _has_dead_row(call.kwargs.get("mask")) if isinstance(call.kwargs.get("mask"), np.ndarray) else False
    flags = _flags(subject, call.fname, call.kwargs)
    size = max(1.0, float(np.abs(call.args[0]).max())) if np.size(call.args[0]) else 1.0  # scores as large
    out = []
    own_dead = bool(call.kwargs.get("is_causal")) and np.shape(call.args[0])[-2] > np.shape(call.args[1])[-2]
    for n, (L_q, L_k, d_k, d_v) in enumerate(ATTENTION_SHAPES):
        for causal, masked in flags if n < 2 else flags[:1]:
            if causal and L_q > L_k and not own_dead:  # causal rows with no key: only when the call had them
                L_q, L_k = L_k, L_q
            q, k = size * rng.standard_normal(LEAD + (L_q, d_k)), rng.standard_normal(LEAD + (L_k, d_k))
            args = (q, k, rng.standard_normal(LEAD + (L_k, d_v))) if call.fname == ATTENTION[0] else (q, k)
            kwargs = dict(kept)
            if causal:
                kwargs["is_causal"] = True
            if masked:
                kwargs["mask"] = _visible(rng, LEAD + (L_q, L_k), dead)
            if isinstance(call.kwargs.get("bias"), np.ndarray):
                kwargs["bias"] = rng.standard_normal(LEAD + (L_q, L_k))
            if sinks is not None:  # one logit per head
                kwargs["sinks"] = rng.standard_normal(LEAD[1])
            for key, on, L in (("q_segment_ids", segments[0], L_q), ("kv_segment_ids", segments[1], L_k)):
                if on:  # two documents, each with queries and keys
                    kwargs[key] = (np.arange(L) >= L // 2).astype(np.int64)
            out.append(_with(call, args, kwargs))
    hides = isinstance(call.kwargs.get("mask"), np.ndarray) or bool(call.kwargs.get("is_causal"))
    if hides and out and subject.dtype in ("float64", "float32"):
        out.append(_large_scores(out[0]))
    return out


LARGE = 1e5  # the large-score probe's largest query value: its scores are tens of thousands


def _large_scores(probe):
    """The first shaped probe with its queries scaled so that its scores are tens of thousands: a hidden key
    whose score exceeds a visible one's by more than a finite fill (-1e4 added) takes weight, where hiding it
    by -inf, `where` or a fill below -1e5 does not; NaN-safe hiding and a finite additive fill part here."""
    q = probe.args[0]
    return _with(probe, (LARGE * q / max(float(np.abs(q).max()), 1.0), *probe.args[1:]), probe.kwargs)


def _weights(rng, D: int, kv: int, biased: bool) -> dict:
    w = {"w_q": rng.standard_normal((D, D)), "w_k": rng.standard_normal((D, kv)),
         "w_v": rng.standard_normal((D, kv)), "w_o": rng.standard_normal((D, D))}
    w = {n: a / np.sqrt(D) for n, a in w.items()}
    if biased:
        w.update(b_q=0.1 * rng.standard_normal(D), b_k=0.1 * rng.standard_normal(kv),
                 b_v=0.1 * rng.standard_normal(kv), b_o=0.1 * rng.standard_normal(D))
    return w


def _multi_head(rng, call, subject) -> list:
    if len(call.args) < 5 or not isinstance(call.args[3], dict):
        return []
    biased = "b_q" in call.args[3]
    grouped = call.kwargs.get("num_kv_heads") is not None
    mask = call.kwargs.get("mask")
    head_axis = isinstance(mask, np.ndarray) and mask.ndim == 4 and mask.shape[1] > 1
    out = []
    for n, (D, H) in enumerate(MHA_SHAPES):
        G = H // 2 if grouped and H % 2 == 0 else (1 if grouped else H)
        for L_q, L_k in ((4, 4), (3, 5)) if n < 2 else ((4, 4),):
            x = rng.standard_normal((2, L_q, D))
            kv = x if L_q == L_k else rng.standard_normal((2, L_k, D))
            kwargs = {k: v for k, v in call.kwargs.items() if k not in ("mask", "num_kv_heads")}
            if grouped:
                kwargs["num_kv_heads"] = G
            if isinstance(mask, np.ndarray):
                kwargs["mask"] = _visible(rng, (2, H if head_axis else 1, L_q, L_k), _has_dead_row(mask))
            out.append(_with(call, (x, kv, kv, _weights(rng, D, G * (D // H), biased), H), kwargs))
    return out


def _layer_norm(rng, call, subject) -> list:
    out = []
    for shape in ((3, 5), (2, 3, 4)):
        x = 1.5 + 2.0 * rng.standard_normal(shape)
        gamma, beta = 1 + 0.5 * rng.standard_normal(shape[-1]), 0.3 * rng.standard_normal(shape[-1])
        out.append(_with(call, (x, gamma, beta, *call.args[3:]), call.kwargs))
    if subject.has("layer_norm", "eps"):  # a large eps on rows of a small spread: eps inside or outside the root
        x = 0.4 * rng.standard_normal((3, 5)) - 1.0
        gamma, beta = 1 + 0.5 * rng.standard_normal(5), 0.3 * rng.standard_normal(5)
        out.append(_with(call, (x, gamma, beta), {**call.kwargs, "eps": 0.5}))
    return out


def _heads(rng, call, subject) -> list:
    if call.fname == "split_heads":
        return [_with(call, (rng.standard_normal((2, 5, 6)), h), {}) for h in (3, 2)]
    return [_with(call, (rng.standard_normal((2, 3, 5, 2)),), {})]


SHAPED = {"scaled_dot_product_attention": _attention, "attention_weights": _attention,
          "multi_head_attention": _multi_head, "layer_norm": _layer_norm, "split_heads": _heads,
          "merge_heads": _heads}


def _fresh(rng, near: bool):
    """New float values of the same shapes: near the call's own (each moved by a twentieth of its row's
    spread, so what made it fail, a large offset, a large score, a sign, is kept), or drawn afresh at the
    array's largest magnitude."""
    def draw(a):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size:
            finite = np.where(np.isfinite(a), a, 0.0)
            size = float(np.abs(finite).max()) or 1.0
            if not near:
                return rng.standard_normal(a.shape) * size
            spread = finite.std(axis=-1, keepdims=True) if a.ndim else np.zeros(())
            spread = np.where(spread > 0, spread, np.maximum(np.abs(finite), 1e-3 * size))
            return np.where(np.isfinite(a), a + 0.05 * spread * rng.standard_normal(a.shape), a)
        return a
    return draw


# The arguments (positions, keywords) that carry the leading axes, by function: a batched probe stacks each
# with a nearby copy along a new first axis, so the failing input itself comes back, larger.
BATCHED = {"scaled_dot_product_attention": ((0, 1, 2), ("mask", "bias")), "attention_weights": ((0, 1), ("mask", "bias")),
           "layer_norm": ((0,), ()), "layer_norm_backward": ((0, 1), ()), "rotary_embedding": ((0,), ()),
           "scaled_dot_product_attention_backward": ((0, 1, 2, 3), ("mask",)), "merge_attention": ((0, 1, 2, 3), ())}


def _batched(rng, call) -> list:
    where = BATCHED.get(call.fname)
    if where is None or any(k.endswith("segment_ids") and v is not None for k, v in call.kwargs.items()):
        return []
    positions, keywords = where
    if len(call.args) <= max(positions) or not all(isinstance(call.args[i], np.ndarray) for i in positions):
        return []
    rank = call.args[positions[0]].ndim
    near = _fresh(rng, True)

    def stack(a):
        if not isinstance(a, np.ndarray) or a.ndim < rank:  # broadcast over the new axis as it is
            return a
        return np.stack([a, near(a) if a.dtype.kind == "f" else a])

    args = [stack(a) if i in positions else a for i, a in enumerate(call.args)]
    kwargs = {k: stack(v) if k in keywords else v for k, v in call.kwargs.items()}
    return [_with(call, args, kwargs, call.native)]


def _poison_apart(call) -> list:
    """A call with NaN or inf in several of its arrays: one probe per such array, keeping its non-finite values and
    replacing the others' by 0. Which input's poison reaches the output tells apart a hidden key's score that is
    added to (K's NaN leaks) from a value multiplied by a weight of 0 (V's NaN leaks)."""
    poisoned = [i for i, a in enumerate(call.args)
                if isinstance(a, np.ndarray) and a.dtype.kind == "f" and not np.isfinite(a).all()]
    if len(poisoned) < 2:
        return []
    return [_with(call, [np.where(np.isfinite(a), a, 0.0) if i in poisoned and i != keep else a
                         for i, a in enumerate(call.args)], call.kwargs, call.native) for keep in poisoned]


def probes(call, subject) -> list:
    """The further inputs for `call`'s function (see the module's docstring). Deterministic. A call made with
    native arrays (a dtype or in-place check) is probed natively too."""
    rng = np.random.default_rng(SEED)
    shaped = SHAPED.get(call.fname)
    out = [_with(p, p.args, p.kwargs, call.native) for p in shaped(rng, call, subject)] if shaped is not None else []
    out += _batched(rng, call)
    out += _poison_apart(call)
    for near in (True, False):
        draw = _fresh(rng, near)
        out.append(_with(call, arrays.map_arrays(call.args, draw), arrays.map_arrays(call.kwargs, draw), call.native))
    return out
