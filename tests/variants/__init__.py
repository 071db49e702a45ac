"""Correct variants: semantics-preserving rewrites of correct code, generated as complete contract modules.

Each variant takes a correct implementation (`impls/mutants/_base.py`, plain NumPy, or `impls/torch_naive.py`)
and replaces, or adds, one or a few functions by another correct way to compute them: another summation
order, `einsum` for `matmul`, a log-sum-exp softmax, an online (streaming) softmax, float32 accumulation
inside float16, the RoPE angle computed in the input's dtype, the reference's LayerNorm backward formula in
PyTorch float32, T5 buckets computed in float32. The code is spliced into a copy of the base's source
(`source`), so a variant is one self-contained file, the way a learner or a library would write it.

Every variant must pass every claim under the `thorough` profile (tests/test_variants.py): a bound whose
yardstick is one lucky rounding of the reference's own order of operations fails one of them.

    VARIANTS            name -> Variant
    source(variant)     the module's text
    write(folder)       every variant written to folder/<name>.py; returns the paths
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NUMPY_BASE = ROOT / "impls" / "mutants" / "_base.py"
TORCH_BASE = ROOT / "impls" / "torch_naive.py"


@dataclass(frozen=True)
class Variant:
    name: str
    base: Path
    what: str  # the rewrite, in words
    functions: dict[str, str]  # function name -> its new source (replaces the base's, or is appended)
    attributes: dict[str, str] = field(default_factory=dict)  # module attribute -> new value's source
    # functions whose base version is kept as _plain_<name> for the new one to call (the paths the rewrite
    # leaves alone: the later chapters' keywords, say), so the variant keeps up with its base
    wraps: tuple[str, ...] = ()


def _code(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def source(variant: Variant) -> str:
    """The base's source with the variant's functions spliced in (replaced where the base has one,
    appended otherwise) and its attributes reassigned after the base's."""
    text = variant.base.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    tree = ast.parse(text)
    spans = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in variant.functions:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            spans[node.name] = (first - 1, node.end_lineno)
    for name, (start, end) in sorted(spans.items(), key=lambda item: -item[1][0]):
        if name in variant.wraps:  # the base's version stays, renamed, and the new one follows it
            kept = "".join(lines[start:end]).replace(f"def {name}(", f"def _plain_{name}(", 1)
            lines[start:end] = [kept, "\n\n", _code(variant.functions[name])]
        else:
            lines[start:end] = [_code(variant.functions[name])]
    extra = [_code(code) for name, code in variant.functions.items() if name not in spans]
    attrs = [f"{name} = {value}\n" for name, value in variant.attributes.items()]
    body = "".join(lines)
    if "\ndef rewire(" in body:  # _base.py: its tail rewires mutants; a variant is a plain module
        body = body[: body.index("\n# ---------------------------------------------------------------------------\n# For the mutants")]
        body += "\n"
    header = f'"""Correct variant {variant.name} of {variant.base.relative_to(ROOT)}: {variant.what}."""\n'
    return header + body + "\n\n" + "\n\n".join(extra) + "".join(attrs)


def write(folder: Path, names=None) -> list[Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, variant in VARIANTS.items():
        if names is None or name in names:
            path = folder / f"{name}.py"
            path.write_text(source(variant), encoding="utf-8")
            paths.append(path)
    return paths


# --------------------------------------------------------------------------------------- NumPy rewrites
_EINSUM = Variant("einsum_for_matmul", NUMPY_BASE, "every matmul of attention and the projections as np.einsum", {
    "_scores": """
        def _scores(q, k, scale):
            return np.einsum("...id,...jd->...ij", q, k) * scale   # (..., L_q, L_k)
    """,
    "_project": """
        def _project(x, weights, which):
            w = np.asarray(weights["w_" + which]).astype(x.dtype, copy=False)
            y = np.einsum("...i,io->...o", x, w)
            b = weights.get("b_" + which)
            return y if b is None else y + np.asarray(b).astype(x.dtype, copy=False)
    """,
    "_weighted_values": """
        def _weighted_values(p, v):
            weighed = (p != 0).any(axis=-2)[..., None]   # (..., L_k, 1): the keys some query weighs
            # a key no query weighs has its values zeroed first: its weight 0 times a NaN value would be NaN
            return np.einsum("...ij,...jd->...id", p, np.where(weighed, v, v.dtype.type(0)))   # (..., L_q, d_v)
    """,
})

_REVERSED = Variant("reversed_summation_order", NUMPY_BASE,
                    "scores and LayerNorm's statistics summed one term at a time, last feature first", {
    "_scores": """
        def _scores(q, k, scale):
            terms = q[..., :, None, ::-1] * k[..., None, :, ::-1]   # (..., L_q, L_k, d_k), last feature first
            return np.cumsum(terms, axis=-1)[..., -1] * scale        # a sequential sum, not a pairwise one
    """,
    "_moments": """
        def _moments(x):
            D = x.shape[-1]
            mean = np.cumsum(x[..., ::-1], axis=-1)[..., -1:] / x.dtype.type(D)
            centred = x - mean
            var = np.cumsum((centred * centred)[..., ::-1], axis=-1)[..., -1:] / x.dtype.type(D)
            return mean, var
    """,
})

_LSE = Variant("logsumexp_softmax", NUMPY_BASE, "softmax as exp(s - logsumexp(s))", {
    "_masked_softmax": """
        def _masked_softmax(scores, visible):
            filled = np.where(visible, scores, -np.inf)
            m = filled.max(axis=-1, keepdims=True, initial=-np.inf)   # a row of no keys (L_k = 0) takes -inf
            m = np.where(np.isfinite(m), m, 0)
            lse = m + np.log(np.where(visible, np.exp(filled - m), 0).sum(axis=-1, keepdims=True))
            return np.where(visible & np.isfinite(lse), np.exp(filled - np.where(np.isfinite(lse), lse, 0)), 0)
    """,
})

_ONLINE = Variant("online_softmax", NUMPY_BASE,
                  "attention streamed over blocks of 3 keys with a running maximum and sum (FlashAttention's recurrence)", {
    "scaled_dot_product_attention": """
        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                         q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None,
                                         return_lse=False, dropout_p=0.0, generator=None):
            later = dict(window_size=window_size, q_segment_ids=q_segment_ids, kv_segment_ids=kv_segment_ids,
                         softcap=softcap, sinks=sinks, generator=generator,
                         dropout_p=dropout_p or None)   # the later chapters' keywords, left to the base
            later = {name: value for name, value in later.items() if value is not None}
            if return_lse or later:
                return _plain_scaled_dot_product_attention(q, k, v, mask, is_causal, scale, bias, return_lse=return_lse,
                                                           **later)
            q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
            _check_qk(q, k)
            _check_lengths(k, v)
            lead = _batch_shape(q=q, k=k, v=v)
            L_q, d_k = q.shape[-2:]
            L_k, d_v = k.shape[-2], v.shape[-1]
            shape = lead + (L_q, L_k)
            visible = _visible(mask, bool(is_causal), shape)
            scale = _default_scale(d_k) if scale is None else float(scale)
            scores = _add_bias(np.broadcast_to(_scores(q, k, scale), shape), bias, shape)
            visible = visible & (scores > -np.inf)
            weighed = visible.any(axis=-2)[..., None]                # (..., L_k, 1): the keys some query sees
            v = np.broadcast_to(v, lead + (L_k, d_v))
            v = np.where(weighed, v, v.dtype.type(0))   # a key no query sees is removed: 0 * NaN would be NaN
            dtype = np.result_type(q, k, v)
            m = np.full(lead + (L_q, 1), -np.inf, dtype=dtype)       # running maximum
            total = np.zeros(lead + (L_q, 1), dtype=dtype)           # running sum of exponentials
            acc = np.zeros(lead + (L_q, d_v), dtype=dtype)           # running weighted sum of V
            for start in range(0, L_k, 3):
                s = np.where(visible[..., start:start + 3], scores[..., start:start + 3], -np.inf)
                new_m = np.maximum(m, s.max(axis=-1, keepdims=True))
                safe = np.where(np.isfinite(new_m), new_m, 0)
                keep = np.where(np.isfinite(m), np.exp(m - safe), 0)
                e = np.where(np.isfinite(s), np.exp(s - safe), 0)
                total = total * keep + e.sum(axis=-1, keepdims=True)
                acc = acc * keep + e @ v[..., start:start + 3, :]
                m = new_m
            return (acc / np.where(total > 0, total, 1)).astype(dtype, copy=False)
    """,
}, wraps=("scaled_dot_product_attention",))

_ROPE_INPUT_DTYPE = Variant("rope_angle_in_input_dtype", NUMPY_BASE,
                            "the textbook RoPE: positions, frequencies and angles in the input's dtype", {
    "rotary_embedding": """
        def rotary_embedding(x, positions, base=10000.0):
            x = np.asarray(x)
            _require_ndim("x", x, 2)
            d = x.shape[-1]
            if d % 2:
                raise ValueError(f"rotary embedding needs an even feature size, got {d}")
            positions = np.asarray(positions)
            try:
                np.broadcast_to(positions, x.shape[:-1])
            except ValueError:
                raise ValueError(f"positions of shape {positions.shape} do not give one position per row of x "
                                 f"(shape {x.shape})") from None
            theta = (1.0 / float(base) ** (np.arange(0, d, 2) / d)).astype(x.dtype)   # (d/2,)
            angle = positions.astype(x.dtype)[..., None] * theta                     # (..., L, d/2) in x's dtype
            cos, sin = np.cos(angle), np.sin(angle)
            even, odd = x[..., 0::2], x[..., 1::2]
            out = np.empty(np.broadcast_shapes(x.shape, angle.shape[:-1] + (d,)), dtype=x.dtype)
            out[..., 0::2] = even * cos - odd * sin
            out[..., 1::2] = even * sin + odd * cos
            return out
    """,
})

_DIV_TERM = Variant("pe_div_term", NUMPY_BASE,
                    "the sinusoidal encoding's frequencies as exp(-2i ln(10000) / D), the Annotated Transformer's form", {
    "_angles": """
        def _angles(length, d_model):
            div_term = np.exp(np.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))   # (ceil(D/2),)
            return np.arange(length)[:, None] * div_term
    """,
})

# --------------------------------------------------------------------------------------- PyTorch rewrites
_TORCH_HALF_FLOAT32 = Variant("torch_float32_inside_half", TORCH_BASE,
                              "float16/bfloat16: every product, sum and softmax computed in float32, stored in the input dtype", {
    "_attention_weights": """
        def _attention_weights(q, k, allowed, scale, bias=None, *later):
            if q.dtype not in _LOW_PRECISION:
                return _plain__attention_weights(q, k, allowed, scale, bias, *later)
            wide = [x.float() if torch.is_tensor(x) and x.is_floating_point() else x for x in (bias, *later)]
            return _plain__attention_weights(q.float(), k.float(), allowed, scale, *wide).to(q.dtype)  # scores in float32
    """,
    "_linear": """
        def _linear(x, w, b):
            if x.dtype not in _LOW_PRECISION:
                return _plain__linear(x, w, b)
            return _plain__linear(x.float(), w.float(), None if b is None else b.float()).to(x.dtype)
    """,
}, wraps=("_attention_weights", "_linear"))

_TORCH_BACKWARD = Variant("torch_backward_passes", TORCH_BASE,
                          "the reference's layer_norm_backward and attention backward formulas, op for op, in PyTorch", {
    "layer_norm_backward": """
        def layer_norm_backward(dy, x, gamma, eps=1e-5):
            check_layer_norm(x, gamma, gamma)
            if dy.shape != x.shape:
                raise ValueError(f"dy has shape {tuple(dy.shape)}, expected x's shape {tuple(x.shape)}")
            mean = x.mean(dim=-1, keepdim=True)
            centred = x - mean
            var = (centred * centred).mean(dim=-1, keepdim=True)
            inv_std = 1.0 / torch.sqrt(var + float(eps))
            x_hat = (x - mean) * inv_std
            rows = tuple(range(x.dim() - 1))
            g = dy * gamma
            dx = inv_std * (g - g.mean(dim=-1, keepdim=True) - x_hat * (g * x_hat).mean(dim=-1, keepdim=True))
            if not rows:
                return dx, dy * x_hat, dy.clone()
            return dx, (dy * x_hat).sum(dim=rows), dy.sum(dim=rows)
    """,
    "_unbroadcast": """
        def _unbroadcast(grad, shape):
            while grad.dim() > len(shape):
                grad = grad.sum(dim=0)
            dims = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
            return grad.sum(dim=dims, keepdim=True) if dims else grad
    """,
    "scaled_dot_product_attention_backward": """
        def scaled_dot_product_attention_backward(dout, q, k, v, mask=None, is_causal=False, scale=None):
            *_, L_q, L_k = check_attention(q, k, v, mask=mask)
            p = _attention_weights(q, k, _visible(mask, is_causal, L_q, L_k, q.device), _scale(q, scale))
            if tuple(dout.shape) != tuple(p.shape[:-1]) + (v.shape[-1],):
                raise ValueError(f"dout has shape {tuple(dout.shape)}, expected the output's shape "
                                 f"{tuple(p.shape[:-1]) + (v.shape[-1],)}")
            dp = torch.matmul(dout, v.transpose(-2, -1))                      # (..., L_q, L_k)
            ds = p * (dp - (p * dp).sum(dim=-1, keepdim=True)) * _scale(q, scale)
            dq, dk = torch.matmul(ds, k), torch.matmul(ds.transpose(-2, -1), q)
            dv = torch.matmul(p.transpose(-2, -1), dout)
            return _unbroadcast(dq, q.shape), _unbroadcast(dk, k.shape), _unbroadcast(dv, v.shape)
    """,
})

_TORCH_RSQRT = Variant("torch_layer_norm_rsqrt", TORCH_BASE,
                       "LayerNorm with one pass of the mean (no correction) and x_hat = (x - mean) * rsqrt(var + eps)", {
    "layer_norm": """
        def layer_norm(x, gamma, beta, eps=1e-5):
            check_layer_norm(x, gamma, beta)
            dtype = x.dtype
            if dtype in _LOW_PRECISION:
                x, gamma, beta = x.float(), gamma.float(), beta.float()
            mean = x.mean(dim=-1, keepdim=True)
            centred = x - mean
            var = (centred * centred).mean(dim=-1, keepdim=True)
            return (centred * torch.rsqrt(var + float(eps)) * gamma + beta).to(dtype)
    """,
})

_TORCH_T5_FLOAT32 = Variant("torch_t5_buckets_in_float32", TORCH_BASE,
                            "T5 buckets with the logarithm in float32, as Hugging Face's T5 computes it", {
    "t5_relative_position_bucket": """
        def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
            n = torch.as_tensor(relative_position).long()
            buckets = torch.zeros_like(n)
            if bidirectional:
                num_buckets //= 2
                buckets += (n > 0).long() * num_buckets
                r = n.abs()
            else:
                r = -torch.min(n, torch.zeros_like(n))
            max_exact = num_buckets // 2
            is_small = r < max_exact
            large = max_exact + (torch.log(r.float() / max_exact) / math.log(max_distance / max_exact)
                                 * (num_buckets - max_exact)).to(torch.long)
            large = torch.min(large, torch.full_like(large, num_buckets - 1))
            return buckets + torch.where(is_small, r, large)
    """,
})

VARIANTS: dict[str, Variant] = {v.name: v for v in (
    _EINSUM, _REVERSED, _LSE, _ONLINE, _ROPE_INPUT_DTYPE, _DIV_TERM,
    _TORCH_HALF_FLOAT32, _TORCH_BACKWARD, _TORCH_RSQRT, _TORCH_T5_FLOAT32,
)}
