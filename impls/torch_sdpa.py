"""Multi-head attention on PyTorch's fused kernels; follows the contract in CONTRACT.md.

Built on `torch.nn.functional.scaled_dot_product_attention` and
`torch.nn.functional.layer_norm`, with what PyTorch does differently handled here:

- PyTorch's `is_causal` is top-left aligned (`j <= i`) and the contract's is bottom-right
  (`j <= i + L_k - L_q`). They agree only for L_q == L_k, so `is_causal=True` is passed
  through only then, with no mask; otherwise the bottom-right mask is built and ANDed with
  the user's (PyTorch refuses `attn_mask` together with `is_causal=True`).
- Its boolean `attn_mask` already means True = may attend (checked on torch 2.13).
- A query with no visible key: torch 2.13 returns 0 there, with finite gradients, but that
  is a property of the version and the backend, not a documented promise. Such rows are
  given a harmless all-visible mask and zeroed afterwards, so the result and its gradient
  are 0 whichever kernel runs.
- The kernel returns no weights; `attention_weights` runs it with V = I, whose output is P.
- Dropout: the kernel's own `dropout_p` draws from PyTorch's global generator and takes no generator
  of the caller's, so the contract's "the same generator state gives the same pattern" cannot hold
  through it. With `dropout_p > 0` the kernel computes P alone (V = I, as for `attention_weights`),
  the mask M is drawn here from the caller's `torch.Generator`, and P' V is one matmul.
- LayerNorm of float16/bfloat16 runs in float32 (lecture note 2 §4.2) and is cast back; below float64
  each row is centred before F.layer_norm, which alone loses digits on rows with a large mean.
"""

import math

import torch
import torch.nn.functional as F

from impls._mask_keywords import and_masks, extra_mask
from impls._head_keywords import head_keywords
from impls._paged import as_contiguous
from reference.checks import check_attention, check_layer_norm, check_multi_head, check_num_heads
from reference.dropout import check_dropout_p

BACKEND = "torch"
DEVICE = "cpu"
DTYPES = ("float64", "float32", "float16", "bfloat16")

_LOW_PRECISION = (torch.float16, torch.bfloat16)


# --8<-- [start:attend]
def _attend(q, k, v, mask, is_causal, scale, bias=None, enable_gqa=False):
    """F.scaled_dot_product_attention with the contract's mask, causal and empty-row rules; no input checks.

    A position bias goes in as PyTorch's float attn_mask, which is added to the scores; hidden
    keys become -inf in it. `enable_gqa`: k and v have fewer heads than q (grouped-query attention).
    """
    L_q, L_k = q.shape[-2], k.shape[-2]
    if scale < 0:  # the math kernel scales q and k by sqrt(scale) each: NaN for scale < 0; s (-K) = (-s) K
        k, scale = -k, -scale
    if mask is None and bias is None and (not is_causal or L_q == L_k):
        # nothing to correct: no mask, and PyTorch's causal triangle is ours when square
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    allowed = mask
    if is_causal:
        causal = torch.ones(L_q, L_k, dtype=torch.bool, device=q.device).tril(diagonal=L_k - L_q)  # bottom-right
        allowed = causal if mask is None else mask & causal
    if bias is None:
        empty = ~allowed.any(dim=-1, keepdim=True)  # (..., L_q, 1): no visible key
        attn_mask = allowed | empty
    else:
        attn_mask = bias.to(q.dtype)
        if allowed is not None:
            attn_mask = torch.where(allowed, attn_mask, float("-inf"))  # (..., L_q, L_k), broadcast
        empty = torch.isneginf(attn_mask).all(dim=-1, keepdim=True)  # (..., L_q, 1): no visible key
        attn_mask = attn_mask.masked_fill(empty, 0.0)
    if attn_mask.dim() < 2:  # the kernel wants at least (L_q, L_k); a (L_k,) mask is the same for every query
        attn_mask = attn_mask.expand(L_q, L_k)  # (L_q, L_k)
    if allowed is not None and not enable_gqa:
        k, v, poisoned = _hidden_poison_removed(k, v, allowed)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=scale, enable_gqa=enable_gqa)
    if allowed is not None and not enable_gqa and poisoned is not None:
        sees = (allowed & poisoned).any(dim=-1, keepdim=True)  # (..., L_q or 1, 1): rows that see a poisoned key
        out = out.masked_fill(sees, float("nan"))
    return out.masked_fill(empty, 0.0)  # (..., L_q, d_v)
# --8<-- [end:attend]


# --8<-- [start:hidden_poison]
def _hidden_poison_removed(k, v, allowed):
    """K and V with what no visible score may read replaced by 0; and the keys whose K was not finite.

    The kernel adds the mask to the scores, and NaN + (-inf) = NaN, 0 * NaN = NaN: a NaN or inf at a
    hidden position would reach the output (PyTorch issue 101967). So V and K of keys no query sees
    become 0, and a key whose K is not finite gets K = 0 for the kernel; the rows that do see such a
    key are set to NaN afterwards, which is what an explicit softmax gives them (CONTRACT.md, "Poison").
    """
    allowed = allowed if allowed.dim() >= 2 else allowed.unsqueeze(0)  # (..., L_q or 1, L_k)
    unseen = ~allowed.any(dim=-2).unsqueeze(-1)  # (..., L_k, 1): no query of the slice sees key j
    zero = torch.zeros((), dtype=v.dtype, device=v.device)
    v = torch.where(unseen, zero, v)
    bad = ~torch.isfinite(k).all(dim=-1, keepdim=True)  # (..., L_k, 1): a NaN or inf in key j
    if not bool(bad.any()):
        return k, v, None
    k = torch.where(bad, zero, k)
    poisoned = (bad & ~unseen).squeeze(-1).unsqueeze(-2)  # (..., 1, L_k): seen by some row, not finite
    return k, v, poisoned
# --8<-- [end:hidden_poison]


def _broadcast_leading(*xs):
    """Expand q, k, v to their common leading dims (a view, no copy), for kernels that do not broadcast."""
    lead = torch.broadcast_shapes(*(x.shape[:-2] for x in xs))
    return tuple(x.expand(*lead, *x.shape[-2:]) for x in xs)  # each (*lead, L, d)


def _scale(q, scale):
    return 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)


def _with_keywords(q, mask, L_q, L_k, window_size, q_segment_ids, kv_segment_ids):
    """The user's mask AND the window AND the documents (causal stays a flag for _attend); None: no mask."""
    return and_masks(mask, extra_mask(q, L_q, L_k, window_size, q_segment_ids, kv_segment_ids))


# --8<-- [start:dropout]
def _dropout(p, dropout_p, generator):
    """P' = P * M / (1 - p), M_ij ~ Bernoulli(1 - p) drawn from `generator` (a torch.Generator)."""
    u = torch.rand(p.shape, generator=generator, dtype=torch.float32, device=p.device)  # (..., L_q, L_k): one draw each
    return torch.where(u >= dropout_p, p / (1 - dropout_p), torch.zeros((), dtype=p.dtype, device=p.device))


def _attend_dropped(q, k, v, mask, is_causal, scale, bias, dropout_p, generator):
    """P' V, with P from the kernel (V = I) and P' = P * M / (1 - p) drawn from the caller's generator.

    q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v) with common leading dims -> (..., L_q, d_v).
    """
    eye = torch.eye(k.shape[-2], dtype=q.dtype, device=q.device).expand(*k.shape[:-1], k.shape[-2])  # P @ I = P
    p = _dropout(_attend(q, k, eye, mask, is_causal, scale, bias), dropout_p, generator)  # (..., L_q, L_k)
    unseen = (p == 0).all(dim=-2).unsqueeze(-1)  # (..., L_k, 1): keys no query weighs (0 * NaN would be NaN)
    return p @ torch.where(unseen, torch.zeros((), dtype=v.dtype, device=v.device), v)  # (..., L_q, d_v)
# --8<-- [end:dropout]


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                 q_segment_ids=None, kv_segment_ids=None, dropout_p=0.0, generator=None):
    """softmax(Q K^T * scale + bias) V; q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v) -> (..., L_q, d_v).

    dropout_p > 0: P' V, each weight kept with probability 1 - p and scaled by 1 / (1 - p), from `generator`."""
    *_, L_q, L_k = check_attention(q, k, v, mask=mask, bias=bias)
    dropout_p = check_dropout_p(dropout_p)
    mask = _with_keywords(q, mask, L_q, L_k, window_size, q_segment_ids, kv_segment_ids)
    q, k, v = _broadcast_leading(q, k, v)
    if dropout_p > 0:
        return _attend_dropped(q, k, v, mask, is_causal, _scale(q, scale), bias, dropout_p, generator)
    return _attend(q, k, v, mask, is_causal, _scale(q, scale), bias)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                      q_segment_ids=None, kv_segment_ids=None, dropout_p=0.0, generator=None):
    """P = softmax(Q K^T * scale + bias) over visible keys, scale = 1/sqrt(d_k) by default; (..., L_q, L_k).

    dropout_p > 0: P' = P * M / (1 - p), M drawn from `generator`, as scaled_dot_product_attention draws it."""
    *_, L_q, L_k = check_attention(q, k, mask=mask, bias=bias)
    dropout_p = check_dropout_p(dropout_p)
    mask = _with_keywords(q, mask, L_q, L_k, window_size, q_segment_ids, kv_segment_ids)
    eye = torch.eye(L_k, dtype=q.dtype, device=q.device)  # (L_k, L_k): P @ I = P
    q, k, eye = _broadcast_leading(q, k, eye)
    p = _attend(q, k, eye, mask, is_causal, _scale(q, scale), bias)  # (..., L_q, L_k)
    return _dropout(p, dropout_p, generator) if dropout_p > 0 else p


def split_heads(x, num_heads):
    """(..., L, D) -> (..., H, L, D/H): head h gets features h*d_k:(h+1)*d_k."""
    *lead, L, D = x.shape
    d_k = check_num_heads(D, num_heads)
    return x.reshape(*lead, L, num_heads, d_k).transpose(-3, -2)  # (..., H, L, d_k)


def merge_heads(heads):
    """(..., H, L, d) -> (..., L, H*d): out[..., l, h*d:(h+1)*d] = heads[..., h, l, :]."""
    *lead, H, L, d = heads.shape
    return heads.transpose(-3, -2).reshape(*lead, L, H * d)  # (..., L, H*d)


def _linear(x, w, b):
    """y = x W + b; F.linear wants nn.Linear's (out, in) weight, so it gets W^T (a view)."""
    return F.linear(x, w.t(), b)


# --8<-- [start:multi_head_attention]
def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None,
                         window_size=None, q_segment_ids=None, kv_segment_ids=None, dropout_p=0.0, training=False,
                         generator=None):
    """Concat(head_1..head_H) W^O + b_O; query (B, L_q, D), key/value (B, L_k, D) -> (B, L_q, D).

    num_kv_heads = G < H: W^K, W^V are (D, G*d_k), and the kernel's `enable_gqa` lets query
    head h read K/V head h // (H/G) without copying K and V. Dropout only while training: then
    the weights are dropped here (_attend_dropped), with K/V head g repeated for its H/G query heads.
    """
    d_k, G = check_multi_head(query, key, value, weights, num_heads, mask, num_kv_heads)
    dropping = check_dropout_p(dropout_p) > 0 and training  # never in evaluation, whatever dropout_p
    B, L_q, D = query.shape
    L_k = key.shape[1]
    H = num_heads
    # 1) project, each input with its (D, D) matrix ((D, G*d_k) for K and V)
    q = _linear(query, weights["w_q"], weights.get("b_q")).view(B, L_q, H, d_k).transpose(1, 2)  # (B, H, L_q, d_k)
    k = _linear(key, weights["w_k"], weights.get("b_k")).view(B, L_k, G, d_k).transpose(1, 2)  # (B, G, L_k, d_k)
    v = _linear(value, weights["w_v"], weights.get("b_v")).view(B, L_k, G, d_k).transpose(1, 2)  # (B, G, L_k, d_k)
    # 2) attend with the fused kernel; the mask broadcasts to (B, H, L_q, L_k)
    later = head_keywords(window_size, q_segment_ids, kv_segment_ids)  # segment ids (B, 1, L): a head axis
    mask = _with_keywords(q, mask, L_q, L_k, later.get("window_size"), later.get("q_segment_ids"),
                          later.get("kv_segment_ids"))  # the user's mask AND the window AND the documents
    if dropping:
        k, v = (t.repeat_interleave(H // G, dim=1) for t in (k, v))  # (B, H, L_k, d_k): head h reads h // (H/G)
        heads = _attend_dropped(q, k, v, mask, is_causal, 1.0 / math.sqrt(d_k), None, dropout_p, generator)
    else:
        heads = _attend(q, k, v, mask, is_causal, 1.0 / math.sqrt(d_k), enable_gqa=G != H)  # (B, H, L_q, d_k)
    # 3) concat along features, then W^O
    concat = heads.transpose(1, 2).reshape(B, L_q, D)  # (B, L_q, H*d_k)
    return _linear(concat, weights["w_o"], weights.get("b_o"))  # (B, L_q, D)
# --8<-- [end:multi_head_attention]


# --8<-- [start:layer_norm]
def layer_norm(x, gamma, beta, eps=1e-5):
    """gamma * (x - mean) / sqrt(var + eps) + beta over the last axis, biased variance; (..., D) -> (..., D)."""
    check_layer_norm(x, gamma, beta)
    D = x.shape[-1:]
    if x.dtype == torch.float64:
        return F.layer_norm(x, D, gamma, beta, float(eps))
    # float32 inside, also for float16/bfloat16 inputs (lecture note 2 §4.2), then back
    x32 = x.float()
    # LN(x - c) = LN(x) for any per-row shift c. Removing the row mean first (exact in float32
    # when the mean dominates the row) leaves F.layer_norm rows with a small mean: rows at
    # 1e4 + unit noise then come out accurate to ~1e-7, not ~1e-3.
    x32 = x32 - x32.mean(dim=-1, keepdim=True)  # (..., D)
    return F.layer_norm(x32, D, gamma.float(), beta.float(), float(eps)).to(x.dtype)
# --8<-- [end:layer_norm]


def sinusoidal_positional_encoding(length, d_model):
    """PE[p, 2i] = sin(p ω_i), PE[p, 2i+1] = cos(p ω_i), ω_i = 10000^(-2i/D); (length, D) float64."""
    p = torch.arange(length, dtype=torch.float64)[:, None]  # (length, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),): the exponent's 2i
    angle = p / 10000.0 ** (two_i / d_model)  # (length, ceil(D/2))
    pe = torch.empty(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # odd D: the last column is a sin
    return pe


# --8<-- [start:paged_attention]
def paged_attention(q, k_cache, v_cache, block_table, seq_lens, is_causal=False, scale=None):
    """Attention of q (B, H, L_q, d_k) over each sequence's tokens in a paged cache (N, H_kv, S, d); (B, H, L_q, d_v).

    The whole table is gathered at once into a padded (B, H, M·S, d) cache; a mask hides the slots past seq_lens."""
    k, v, mask = as_contiguous(q, k_cache, v_cache, block_table, seq_lens, is_causal)
    return scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)
# --8<-- [end:paged_attention]
