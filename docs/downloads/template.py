"""Your implementation of multi-head attention: the starting point for a learner.

Fill in each function, then check it against the specification:

    pytest --impl impls/template.py        (or a copy of this file anywhere: --impl ~/hw/attention.py)

Every function follows the implementation contract in CONTRACT.md; its docstring states
the equation, the shapes and the rules that most often trip people up. A function that
still raises NotImplementedError is reported as "not implemented", and the message points
at the chapter to read. Delete a function entirely to skip its claims instead.

Work with NumPy arrays in and NumPy arrays out (BACKEND below), in the input's dtype.
Do not modify an argument in place, and raise ValueError (naming the offending values)
for the bad inputs each docstring lists.
"""

import math  # noqa: F401  (you will want math.sqrt)

import numpy as np  # noqa: F401

BACKEND = "numpy"
DTYPES = ("float64", "float32")


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None):
    """Attention(Q, K, V) = softmax(Q K^T * scale + bias) V, with scale = 1/sqrt(d_k) by default.

    Shapes: q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v) -> out (..., L_q, d_v).
    The leading dims (batch, heads, ...) broadcast: q (2, 1, L_q, d) with k, v (1, 3, L_k, d)
    gives (2, 3, L_q, d_v). L_q != L_k, d_k != d_v and L = 1 are all legal.

    Rules that trip people up:
    - `mask` is boolean and True means "this query MAY attend to this key" (not "hide it");
      it broadcasts to (..., L_q, L_k).
    - `is_causal=True` lets query i see key j only if j <= i + (L_k - L_q): bottom-right
      aligned, the queries are the *last* L_q positions (for L_q == L_k, the usual lower
      triangle). This is not PyTorch's top-left `is_causal`.
    - mask and is_causal together: a key is visible only if both allow it.
    - A query row with no visible key outputs exactly 0: not NaN (what filling with -inf
      and a plain softmax gives) and not the mean of v (what filling with -1e9 gives).
    - Softmax is stabilised by subtracting each row's own maximum.
    - An explicit `scale` replaces 1/sqrt(d_k).
    - `bias` (later chapter, docs/positional.md): a float array broadcastable to
      (..., L_q, L_k) added to the scaled scores before the softmax; it carries T5's and
      ALiBi's relative position biases. An entry of -inf hides its key like mask=False.
    - Mask algebra (later chapter, docs/mask_algebra.md; add these keywords to this function
      and to attention_weights when you take it, until then its claims are "not implemented"):
      `window_size=(left, right)` lets query i see key j only if
      -left <= j - (i + L_k - L_q) <= right (bottom-right like causal, inclusive; None on a
      side: no limit); `q_segment_ids` (..., L_q) and `kv_segment_ids` (..., L_k), integers,
      let query i see key j only if their ids are equal (packed documents; one given alone
      serves both). Everything combines by AND: mask AND causal AND window AND documents.
    - Softcapping and sinks (later chapter, docs/softcap_sinks.md; add the keywords when you
      take it): `softcap=cap` (a number > 0) replaces the scaled scores S by cap * tanh(S / cap)
      before the mask (and before `bias`); `sinks` (float, one logit per head, broadcastable to
      the scores' leading dims, e.g. (H,)) joins each row's softmax denominator with no value:
      P_ij = exp(S_ij - m) / (exp(sink - m) + sum_j' exp(S_ij' - m)), m = max(sink, max_j S_ij),
      so rows sum to less than 1, and a row with every key hidden still outputs exactly 0.
    - `return_lse=True` (later chapter, docs/log_sum_exp.md): return (out, lse), lse (..., L_q)
      the log of each row's softmax denominator, m + log sum_j exp(S_ij - m) over the visible
      keys (and the sink), -inf for a row that sees no key (with a sink, that row's lse may be the
      sink or -inf). See merge_attention.
    - Poison at hidden positions (docs/masks.md): NaN or inf in k or v of a key no query sees,
      or in k of a key hidden from a row, must not reach that output. 0 * NaN is NaN, so hide
      scores with `where` (not by adding -inf or multiplying by 0) and zero the values of keys
      no query weighs before P @ v.
    - Degenerate sizes (docs/sdpa.md): L_q = 0 gives (..., 0, d_v); L_k = 0 gives rows of 0 (a
      max over no keys must not raise: NumPy's max needs initial=-inf). A negative explicit
      `scale` is used as given (never abs(scale)).
    - Dropout (later chapter, docs/dropout.md; add `dropout_p=0.0, generator=None` here and to
      attention_weights when you take it): each weight of P kept with probability 1 - p and
      scaled by 1 / (1 - p), one draw per weight and head from `generator` (np.random.Generator
      or torch.Generator); p = 0 is the identity; 0 <= p < 1, else ValueError naming dropout_p.
    - Outputs keep the input dtype (under NumPy 2, float32 * np.float64(s) is float64;
      multiply by a Python float instead).

    Raise ValueError if q.shape[-1] != k.shape[-1], if k and v lengths differ, if the
    mask is not boolean or does not broadcast to (..., L_q, L_k), or if the bias is
    boolean or does not broadcast.
    """
    raise NotImplementedError("scaled_dot_product_attention is not written yet: see the chapter docs/sdpa.md")


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None):
    """P = softmax(Q K^T * scale + bias) over the visible keys, scale = 1/sqrt(d_k) by default.

    Shapes: q (..., L_q, d_k), k (..., L_k, d_k) -> p (..., L_q, L_k); leading dims broadcast.

    Each row of P is a probability distribution over the keys that query may see:
    entries >= 0, summing to 1. A hidden key (mask False, or j > i + (L_k - L_q) under
    `is_causal`) has weight exactly 0, and a row with no visible key is all 0 (never NaN).
    The same mask rules as scaled_dot_product_attention (True = may attend, bottom-right
    causal, mask AND causal, the same additive bias); it is the P that
    scaled_dot_product_attention multiplies by v.

    Raise ValueError if q.shape[-1] != k.shape[-1], or if the mask is not boolean or does
    not broadcast to (..., L_q, L_k).
    """
    raise NotImplementedError("attention_weights is not written yet: see the chapter docs/sdpa.md")


def split_heads(x, num_heads):
    """(..., L, D) -> (..., H, L, d_k) with d_k = D / H: head h gets features h*d_k:(h+1)*d_k.

    heads[..., h, l, :] == x[..., l, h*d_k:(h+1)*d_k]. Reshaping (..., L, D) straight to
    (..., H, L, d_k) mixes positions and heads: reshape to (..., L, H, d_k) first, then swap
    the L and H axes. Any number of leading dims.

    Raise ValueError if num_heads < 1 or D % num_heads != 0 (say both numbers).
    """
    raise NotImplementedError("split_heads is not written yet: see the chapter docs/multi_head.md")


def merge_heads(heads):
    """(..., H, L, d) -> (..., L, H*d): Concat(head_1, ..., head_H) along the features.

    out[..., l, h*d:(h+1)*d] == heads[..., h, l, :]. The heads are concatenated along the
    feature axis, never along L; merge_heads(split_heads(x, H)) == x.
    """
    raise NotImplementedError("merge_heads is not written yet: see the chapter docs/multi_head.md")


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_H) W^O + b_O,
    head_h = Attention(Q W_h^Q + b_h^Q, K W_h^K + b_h^K, V W_h^V + b_h^V).

    Shapes: query (B, L_q, D), key and value (B, L_k, D) -> out (B, L_q, D).
    Self-attention passes the same array three times.

    `weights` is a dict with w_q, w_k, w_v, w_o, each (D, D), and optional b_q, b_k, b_v,
    b_o, each (D,) (missing means no bias). Orientation: y = x @ W + b, the math's X W^Q,
    NOT nn.Linear's stored (out, in) weight. With d_k = D / H, head h uses the columns
    h*d_k:(h+1)*d_k of w_q, w_k, w_v (and of b_q, b_k, b_v) and the rows h*d_k:(h+1)*d_k
    of w_o. Each head's scale is 1/sqrt(d_k), with the per-head d_k = D / H, not D.

    `mask` (True = may attend) broadcasts to (B, H, L_q, L_k): a key-padding mask is
    (B, 1, 1, L_k). `is_causal` is bottom-right aligned and ANDed with the mask, exactly as
    in scaled_dot_product_attention; a query with no visible key gives a zero head output.

    `num_kv_heads` = G (later chapter, grouped-query attention; None means G = H): G must
    divide H; w_k and w_v (and b_k, b_v) are then (D, G*d_k) and (G*d_k,), holding G K/V
    heads, and query head h reads K/V head h // (H / G): consecutive query heads share one
    (not h % G). G = 1 is multi-query attention.

    Dropout (later chapter, docs/dropout.md): `dropout_p=0.0, training=False, generator=None`;
    weights are dropped only when training=True. In evaluation (training=False) there is no
    dropout whatever dropout_p says.

    Raise ValueError if D % num_heads != 0 (say both numbers), num_heads < 1, num_kv_heads
    does not divide num_heads (say both), a weight or bias has the wrong shape, or the mask
    is not boolean or does not broadcast.
    """
    raise NotImplementedError("multi_head_attention is not written yet: see the chapter docs/multi_head.md")


def layer_norm(x, gamma, beta, eps=1e-5):
    """LN(x) = gamma * (x - mean) / sqrt(var + eps) + beta, over the last axis.

    Shapes: x (..., D), gamma (D,), beta (D,) -> out (..., D).

    mean = (1/D) sum_i x_i and var = (1/D) sum_i (x_i - mean)^2: the *biased* (population)
    variance, dividing by D, not D - 1 (np.var's default, not torch.std's), and eps goes
    INSIDE the square root, not added to the standard deviation. Statistics are per row:
    nothing is shared across the batch. Compute the variance from the centred values
    (two passes); E[x^2] - E[x]^2 loses every digit on rows with a large mean.

    Raise ValueError if gamma or beta is not of shape (D,).
    """
    raise NotImplementedError("layer_norm is not written yet: see the chapter docs/layer_norm.md")


def sinusoidal_positional_encoding(length, d_model):
    """PE[p, 2i] = sin(p / 10000^(2i/D)), PE[p, 2i+1] = cos(p / 10000^(2i/D)), D = d_model.

    Returns a float64 array of shape (length, d_model). Sin and cos interleave: even
    columns are sines, odd columns cosines, columns 2i and 2i+1 share one frequency
    (not the first half sines and the second half cosines). pe[0] = [0, 1, 0, 1, ...].
    For odd d_model the last column is a sine.
    """
    raise NotImplementedError("sinusoidal_positional_encoding is not written yet: see the chapter docs/positional.md")


# -- Later chapters ------------------------------------------------------------------------


def rotary_embedding(x, positions, base=10000.0):
    """RoPE: rotate each interleaved pair (x[..., 2i], x[..., 2i+1]) of row l by positions[l] * θ_i.

    θ_i = base^(-2i/d), i = 0 .. d/2 - 1:
        out[2i]   = x[2i] cos(m θ_i) - x[2i+1] sin(m θ_i)
        out[2i+1] = x[2i] sin(m θ_i) + x[2i+1] cos(m θ_i)

    Shapes: x (..., L, d) with d even; positions (L,) integers (or anything broadcastable to
    x.shape[:-1]) -> out (..., L, d), in x's dtype. Pairs are interleaved (2i, 2i+1), as in the
    paper: not LLaMA's "rotate_half" layout (i, i + d/2), which is the same rotation on
    permuted features. Compute the angles m θ_i in float64 and cast only cos and sin to x's
    dtype: an angle of a few hundred radians loses digits in float32 (and everything in float16).
    Position 0 must give x back exactly.

    Raise ValueError if d is odd, or if positions do not give one position per row.
    """
    raise NotImplementedError("rotary_embedding is not written yet: see the chapter docs/positional.md")


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """T5's bucket of each relative position n = j - i (key minus query), an integer array of n's shape.

    bidirectional: half the buckets per direction, N = num_buckets / 2; n > 0 (keys after the
        query) uses buckets N .. 2N-1, n <= 0 uses 0 .. N-1; r = |n|.
    causal (bidirectional=False): N = num_buckets, r = max(-n, 0) (every n > 0 is bucket 0).
    With E = N / 2:  r < E  -> bucket r (exact);
                     r >= E -> E + floor(log(r / E) / log(max_distance / E) * (N - E)), at most N - 1.
    The bias added to the scores is table[h, bucket(j - i)]: it depends on j - i only.
    """
    raise NotImplementedError("t5_relative_position_bucket is not written yet: see the chapter docs/positional.md")


def layer_norm_backward(dy, x, gamma, eps=1e-5):
    """Gradients of y = layer_norm(x, gamma, beta, eps) given dy = dloss/dy: returns (dx, dgamma, dbeta).

    With x_hat = (x - mean) / sigma, sigma = sqrt(var + eps) (biased variance, last axis)
    and g = dy * gamma:
        dbeta  = dy summed over every axis but the last              (D,)
        dgamma = (dy * x_hat) summed likewise                        (D,)
        dx     = (g - mean(g) - x_hat * mean(g * x_hat)) / sigma      means over the last axis
    The two subtracted means are the mean's and the variance's dependence on every x_i;
    forgetting either is the usual bug. dx has x's shape.

    Raise ValueError if dy's shape differs from x's or gamma is not (D,).
    """
    raise NotImplementedError("layer_norm_backward is not written yet: see the chapter docs/gradients.md")


def scaled_dot_product_attention_backward(dout, q, k, v, mask=None, is_causal=False, scale=None):
    """Gradients of out = scaled_dot_product_attention(q, k, v, mask, is_causal, scale) given dout: (dq, dk, dv).

    With P the attention weights (the same masking rules as the forward pass):
        dv = P^T dout
        dP = dout v^T
        dS = P * (dP - rowsum(dP * P))          the softmax's Jacobian, row by row
        dq = dS k * scale,   dk = dS^T q * scale
    A hidden key has P = 0, so no gradient flows through it; a query row that sees no key
    gets exactly zero gradients (never NaN). If q, k or v were broadcast over leading dims,
    sum their gradients back to their own shapes. dq, dk, dv have the shapes of q, k, v.

    Raise ValueError if dout is not of the output's shape (..., L_q, d_v).
    """
    raise NotImplementedError(
        "scaled_dot_product_attention_backward is not written yet: see the chapter docs/gradients.md")


def merge_attention(out1, lse1, out2, lse2):
    """Attention over two disjoint key sets K_1, K_2 from each one's result: -> (out, lse) over K_1 ∪ K_2.

    out_k (..., L_q, d_v) and lse_k (..., L_q) come from
    scaled_dot_product_attention(..., return_lse=True) over K_k alone, where
    lse_i = log sum_{j visible} exp(S_ij) (S the scaled scores; -inf for a row that sees no key):
        lse = log(exp(lse1) + exp(lse2))            (np.logaddexp: never exp() alone)
        out = exp(lse1 - lse) * out1 + exp(lse2 - lse) * out2
    A row where both halves saw nothing has lse = -inf and outputs exactly 0, not NaN.
    (Later chapter, docs/log_sum_exp.md; return_lse=True is a keyword of
    scaled_dot_product_attention you add with it.)

    Raise ValueError if the two halves' shapes differ, or if lse is not out's shape without its last axis.
    """
    raise NotImplementedError("merge_attention is not written yet: see the chapter docs/log_sum_exp.md")


def paged_attention(q, k_cache, v_cache, block_table, seq_lens, is_causal=False, scale=None):
    """Attention over a paged KV cache: -> out (B, H, L_q, d_v).

    q (B, H, L_q, d_k); k_cache (N, H_kv, S, d_k), v_cache (N, H_kv, S, d_v): a pool of N blocks
    of S token slots; block_table (B, M) ints; seq_lens (B,) ints. Token t of sequence b is
        k_cache[block_table[b, t // S], :, t % S]
    so sequence b's keys are its blocks block_table[b, 0], block_table[b, 1], ... in that order,
    joined along the slot axis and cut at seq_lens[b] (the rest of the last block is not a token).
    out[b] = scaled_dot_product_attention(q[b], K_b, V_b, is_causal=is_causal, scale=scale),
    query head h reading K/V head h // (H / H_kv); with is_causal the L_q queries are the last
    L_q positions of their own sequence (bottom-right). A sequence with seq_lens[b] = 0 outputs 0.
    (Later chapter, docs/efficient.md: EFF-6, EFF-7.)

    Raise ValueError if seq_lens[b] is not in 0 .. M * S, a block index is not in 0 .. N - 1,
    or the shapes do not fit together.
    """
    raise NotImplementedError("paged_attention is not written yet: see the chapter docs/efficient.md")
