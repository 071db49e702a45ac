"""Multi-head attention in plain PyTorch, written the way lecture note 1's code is; follows the contract in CONTRACT.md.

Lecture note 1's `MultiHeadAttention.forward`, step for step (view + transpose to split the
heads, `torch.matmul`, `masked_fill` with -inf, `F.softmax`, transpose + contiguous +
view to merge), with the corrections the contract requires:

- a mask is boolean and True means "may attend" (the lecture note's fill where `mask == 0` agrees);
- `is_causal` is bottom-right aligned, `j <= i + (L_k - L_q)`, and is ANDed with the mask;
- a query with no visible key outputs exactly 0 with weights 0 (the lecture note's -inf fill
  gives NaN there), and its gradient is 0, not NaN;
- weights are (D, D) in the `y = x @ W + b` orientation, not `nn.Linear`'s (out, in);
- in float16 and bfloat16 the softmax and the LayerNorm statistics run in float32
  (lecture note 2 §4.2: "LayerNorm must stay in FP32"), and the result is cast back.

What stays naive: Q K^T is computed in the input dtype, so float16 scores beyond
65504 overflow to inf (and the softmax gives NaN), as they do in the lecture notes' code and
in the float16 oracle; PyTorch's fused kernel accumulates in float32 and does not.
"""

import math

import torch
import torch.nn.functional as F

from impls._mask_keywords import and_masks, extra_mask
from impls._head_keywords import head_keywords
from impls._paged import as_contiguous
from reference.checks import check_attention, check_layer_norm, check_multi_head, check_num_heads, check_rotary
from reference.dropout import check_dropout_p
from reference.softcap import check_softcap

BACKEND = "torch"
DEVICE = "cpu"
DTYPES = ("float64", "float32", "float16", "bfloat16")

_LOW_PRECISION = (torch.float16, torch.bfloat16)


# --8<-- [start:visible]
def _visible(mask, is_causal, L_q, L_k, device):
    """mask AND (j <= i + L_k - L_q), broadcastable to (..., L_q, L_k); None when every key is visible."""
    if not is_causal:
        return mask
    causal = torch.ones(L_q, L_k, dtype=torch.bool, device=device).tril(diagonal=L_k - L_q)  # bottom-right
    return causal if mask is None else mask & causal
# --8<-- [end:visible]


# --8<-- [start:softmax]
def _attention_weights(q, k, allowed, scale, bias=None, softcap=None, sinks=None):
    """softmax(Q K^T * scale + bias) over the keys `allowed` lets through; no input checks."""
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale  # (..., L_q, d_k) @ (..., d_k, L_k) -> (..., L_q, L_k)
    if softcap is not None:
        # Gemma 2's cap, on the scaled scores, before the mask; in float32 for float16/bfloat16, where a
        # large cap itself would overflow
        capped = softcap * torch.tanh(scores.to(torch.float32) / softcap) if q.dtype in _LOW_PRECISION else \
            softcap * torch.tanh(scores / softcap)
        scores = capped.to(q.dtype)
    if bias is not None:
        scores = scores + bias  # an additive position bias (T5, ALiBi); -inf entries hide keys
    empty = None
    if allowed is not None or bias is not None:
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        # A row of -inf would softmax to NaN, in the forward pass and in the gradient;
        # give it finite scores and zero its weights after the softmax instead.
        empty = torch.isneginf(scores).all(dim=-1, keepdim=True)  # (..., L_q, 1): no visible key
        scores = scores.masked_fill(empty, 0.0)
    if sinks is not None:  # gpt-oss: the sink is one more column of the softmax, dropped afterwards
        sink = sinks.to(scores.dtype)[..., None, None].expand(*scores.shape[:-1], 1)  # (..., L_q, 1)
        scores = torch.cat([scores, sink], dim=-1)  # (..., L_q, L_k + 1)
    # float16/bfloat16: exponentials and their sum in float32, then back to the input dtype
    p = F.softmax(scores, dim=-1, dtype=torch.float32 if q.dtype in _LOW_PRECISION else None).to(q.dtype)
    if sinks is not None:
        p = p[..., :-1]  # the sink's share carries no value
    if empty is not None:
        p = p.masked_fill(empty, 0.0)
    return p
# --8<-- [end:softmax]


def _check_softcap_and_sinks(softcap, sinks, scores_shape):
    """softcap: a finite number > 0; sinks: float logits broadcastable to the scores' leading dims."""
    if softcap is not None:
        softcap = check_softcap(softcap)
    if sinks is not None:
        lead = tuple(scores_shape[:-2])
        if not sinks.is_floating_point() or sinks.dim() > len(lead):
            raise ValueError(f"sinks must be float logits broadcastable to {lead}, got {sinks.dtype} of shape "
                             f"{tuple(sinks.shape)}")
        try:
            broadcasts = tuple(torch.broadcast_shapes(sinks.shape, lead)) == lead
        except RuntimeError:
            broadcasts = False
        if not broadcasts:
            raise ValueError(f"sinks of shape {tuple(sinks.shape)} do not broadcast to {lead}")
    return softcap


def _scale(q, scale):
    return 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                      q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, dropout_p=0.0, generator=None):
    """P = softmax(Q K^T * scale + bias) over visible keys, scale = 1/sqrt(d_k) by default; (..., L_q, L_k)."""
    shape = check_attention(q, k, mask=mask, bias=bias)
    L_q, L_k = shape[-2:]
    softcap = _check_softcap_and_sinks(softcap, sinks, shape)
    allowed = and_masks(_visible(mask, is_causal, L_q, L_k, q.device),
                        extra_mask(q, L_q, L_k, window_size, q_segment_ids, kv_segment_ids))  # AND window, documents
    p = _attention_weights(q, k, allowed, _scale(q, scale), bias, softcap, sinks)
    return _dropout(p, dropout_p, generator)


# --8<-- [start:dropout]
def _dropout(p, dropout_p, generator):
    """P' = P * M / (1 - p), M_ij ~ Bernoulli(1 - p) drawn from `generator` (a torch.Generator); P when p = 0."""
    dropout_p = check_dropout_p(dropout_p)
    if dropout_p == 0:
        return p
    u = torch.rand(p.shape, generator=generator, dtype=torch.float32, device=p.device)  # one draw per weight
    return torch.where(u >= dropout_p, p / (1 - dropout_p), torch.zeros((), dtype=p.dtype, device=p.device))
# --8<-- [end:dropout]


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                 q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, return_lse=False,
                                 dropout_p=0.0, generator=None):
    """softmax(Q K^T * scale + bias) V; q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v) -> (..., L_q, d_v).

    return_lse=True: (out, lse), lse (..., L_q) = torch.logsumexp of each row's visible scores (and sink)."""
    shape = check_attention(q, k, v, mask=mask, bias=bias)
    L_q, L_k = shape[-2:]
    softcap = _check_softcap_and_sinks(softcap, sinks, shape)
    allowed = and_masks(_visible(mask, is_causal, L_q, L_k, q.device),
                        extra_mask(q, L_q, L_k, window_size, q_segment_ids, kv_segment_ids))  # AND window, documents
    p = _dropout(_attention_weights(q, k, allowed, _scale(q, scale), bias, softcap, sinks), dropout_p, generator)
    unseen = (p == 0).all(dim=-2).unsqueeze(-1)  # (..., L_k, 1): keys no query weighs (0 · NaN would be NaN)
    v = torch.where(unseen, torch.zeros((), dtype=v.dtype), v)
    out = torch.matmul(p, v)  # (..., L_q, L_k) @ (..., L_k, d_v) -> (..., L_q, d_v)
    if not return_lse:
        return out
    scores = torch.matmul(q, k.transpose(-2, -1)) * _scale(q, scale)  # the scores again, for their log-sum-exp
    if softcap is not None:
        scores = softcap * torch.tanh(scores / softcap)
    if bias is not None:
        scores = scores + bias
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    if sinks is not None:
        sink = sinks.to(scores.dtype)[..., None, None].expand(*scores.shape[:-1], 1)
        scores = torch.cat([scores, sink], dim=-1)
    return out, torch.logsumexp(scores, dim=-1)  # torch subtracts the row max; a row of -inf gives -inf


def merge_attention(out1, lse1, out2, lse2):
    """Attention over two disjoint key sets from each one's (out, lse): out = sum_k exp(lse_k - lse) out_k."""
    if out1.shape != out2.shape or lse1.shape != lse2.shape or out1.shape[:-1] != lse1.shape:
        raise ValueError(f"partial results of mismatched shapes: out {tuple(out1.shape)}, {tuple(out2.shape)}; "
                         f"lse {tuple(lse1.shape)}, {tuple(lse2.shape)}")
    lse = torch.logaddexp(lse1, lse2)  # (..., L_q); -inf when both halves saw nothing
    safe = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
    w1 = torch.where(torch.isfinite(lse), torch.exp(lse1 - safe), torch.zeros_like(lse))[..., None]
    w2 = torch.where(torch.isfinite(lse), torch.exp(lse2 - safe), torch.zeros_like(lse))[..., None]
    return w1 * out1 + w2 * out2, lse


def split_heads(x, num_heads):
    """(..., L, D) -> (..., H, L, D/H): head h gets features h*d_k:(h+1)*d_k."""
    *lead, L, D = x.shape
    d_k = check_num_heads(D, num_heads)
    # the lecture note's .view, as .reshape so that a non-contiguous x works too
    x = x.reshape(*lead, L, num_heads, d_k)  # (..., L, H, d_k)
    return x.transpose(-3, -2)  # (..., H, L, d_k)


def merge_heads(heads):
    """(..., H, L, d) -> (..., L, H*d): out[..., l, h*d:(h+1)*d] = heads[..., h, l, :]."""
    *lead, H, L, d = heads.shape
    x = heads.transpose(-3, -2).contiguous()  # (..., L, H, d); view needs contiguous memory
    return x.view(*lead, L, H * d)  # (..., L, H*d)


def _linear(x, w, b):
    """y = x W + b with W stored (in, out), as in the math's X W^Q."""
    y = torch.matmul(x, w)
    return y if b is None else y + b


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None,
                         window_size=None, q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None,
                         dropout_p=0.0, training=False, generator=None):
    """Concat(head_1..head_H) W^O + b_O; query (B, L_q, D), key/value (B, L_k, D) -> (B, L_q, D).

    num_kv_heads = G (grouped-query attention): W^K, W^V are (D, G*d_k); each K/V head is
    repeated for the H/G consecutive query heads that share it.
    """
    d_k, G = check_multi_head(query, key, value, weights, num_heads, mask, num_kv_heads)
    B, L_q, D = query.shape
    L_k = key.shape[1]

    # 1) project: (B, L, D) -> (B, L, D), all H heads' D x d_k blocks in one D x D matrix (D x G*d_k for K, V)
    Q = _linear(query, weights["w_q"], weights.get("b_q"))  # (B, L_q, D)
    K = _linear(key, weights["w_k"], weights.get("b_k"))  # (B, L_k, G*d_k)
    V = _linear(value, weights["w_v"], weights.get("b_v"))  # (B, L_k, G*d_k)

    # 2) split heads: (B, L, D) -> (B, L, H, d_k) -> (B, H, L, d_k)
    Q = Q.view(B, L_q, num_heads, d_k).transpose(1, 2)  # (B, H, L_q, d_k)
    K = K.view(B, L_k, G, d_k).transpose(1, 2)  # (B, G, L_k, d_k)
    V = V.view(B, L_k, G, d_k).transpose(1, 2)  # (B, G, L_k, d_k)
    if G != num_heads:  # K/V head g serves query heads g*H/G .. (g+1)*H/G - 1
        K = K.repeat_interleave(num_heads // G, dim=1)  # (B, H, L_k, d_k)
        V = V.repeat_interleave(num_heads // G, dim=1)  # (B, H, L_k, d_k)

    # 3) attend: the mask broadcasts to (B, H, L_q, L_k)
    later = head_keywords(window_size, q_segment_ids, kv_segment_ids, softcap, sinks)
    if check_dropout_p(dropout_p) and training:  # dropout only while training, never in evaluation
        later.update(dropout_p=dropout_p, generator=generator)
    if later:  # a later chapter's keyword: each head through this module's attention, which takes it
        out = scaled_dot_product_attention(Q, K, V, mask=mask, is_causal=is_causal, **later)  # (B, H, L_q, d_k)
    else:
        p = _attention_weights(Q, K, _visible(mask, is_causal, L_q, L_k, query.device), 1.0 / math.sqrt(d_k))
        out = torch.matmul(p, V)  # (B, H, L_q, L_k) @ (B, H, L_k, d_k) -> (B, H, L_q, d_k)

    # 4) merge heads along the features: (B, H, L_q, d_k) -> (B, L_q, H, d_k) -> (B, L_q, D)
    out = out.transpose(1, 2).contiguous().view(B, L_q, D)  # (B, L_q, D)

    # 5) output projection
    return _linear(out, weights["w_o"], weights.get("b_o"))  # (B, L_q, D)


def layer_norm(x, gamma, beta, eps=1e-5):
    """gamma * (x - mean) / sqrt(var + eps) + beta over the last axis, biased variance; (..., D) -> (..., D)."""
    check_layer_norm(x, gamma, beta)
    dtype = x.dtype
    if dtype in _LOW_PRECISION:  # statistics in float32 (lecture note 2 §4.2)
        x, gamma, beta = x.float(), gamma.float(), beta.float()
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    centred = x - mean  # (..., D); two passes, no E[x²] - E[x]² cancellation
    # The centred row's own mean is the rounding error of the first mean; removing it
    # (the corrected two-pass algorithm) keeps float32 rows with a large mean accurate.
    centred = centred - centred.mean(dim=-1, keepdim=True)
    var = (centred * centred).mean(dim=-1, keepdim=True)  # (..., 1), biased: divides by D
    return (gamma * (centred / torch.sqrt(var + float(eps))) + beta).to(dtype)


def sinusoidal_positional_encoding(length, d_model):
    """PE[p, 2i] = sin(p ω_i), PE[p, 2i+1] = cos(p ω_i), ω_i = 10000^(-2i/D); (length, D) float64."""
    p = torch.arange(length, dtype=torch.float64)[:, None]  # (length, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),): the exponent's 2i
    angle = p / 10000.0 ** (two_i / d_model)  # (length, ceil(D/2))
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # odd D: the last column is a sin
    return pe


def rotary_embedding(x, positions, base=10000.0):
    """RoPE on interleaved pairs: (x[2i], x[2i+1]) rotated by positions[l] * base^(-2i/d); (..., L, d).

    The angles are computed in float64 and only their cos and sin are cast to x's dtype:
    an angle m·θ rounded to float16 or bfloat16 would be off by a whole radian at m ~ 500.
    """
    check_rotary(x, positions)
    d = x.shape[-1]
    theta = float(base) ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)  # (d/2,)
    angle = positions.to(device=x.device, dtype=torch.float64)[..., None] * theta  # (..., L, d/2)
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., L, d/2)
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)  # (..., L, d/2, 2)
    return rotated.flatten(-2)  # (..., L, d): pairs back in place


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """T5's bucket of n = j - i: exact below half the buckets of a direction, logarithmic up to max_distance."""
    n = torch.as_tensor(relative_position).long()
    offset = torch.zeros_like(n)
    if bidirectional:
        num_buckets //= 2
        offset = (n > 0).long() * num_buckets  # keys after the query: the upper half
        r = n.abs()
    else:
        r = (-n).clamp(min=0)  # keys after the query share bucket 0
    exact = num_buckets // 2
    log_ratio = torch.log(r.clamp(min=exact).double() / exact) / math.log(max_distance / exact)
    far = (exact + (log_ratio * (num_buckets - exact)).floor().long()).clamp(max=num_buckets - 1)
    return offset + torch.where(r < exact, r, far)


# --8<-- [start:paged_attention]
def paged_attention(q, k_cache, v_cache, block_table, seq_lens, is_causal=False, scale=None):
    """Attention of q (B, H, L_q, d_k) over each sequence's tokens in a paged cache (N, H_kv, S, d); (B, H, L_q, d_v).

    The whole table is gathered at once into a padded (B, H, M·S, d) cache; a mask hides the slots past seq_lens."""
    k, v, mask = as_contiguous(q, k_cache, v_cache, block_table, seq_lens, is_causal)
    return scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)
# --8<-- [end:paged_attention]
