"""Your implementation of multi-head attention: the starting point for a learner.

Fill in each function, then check it against the specification:

    pytest --impl impls/template.py        (or a copy of this file anywhere: --impl ~/hw/attention.py)

Every function follows the implementation contract in DESIGN.md; its docstring states
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


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    """Attention(Q, K, V) = softmax(Q K^T * scale) V, with scale = 1/sqrt(d_k) by default.

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
    - Outputs keep the input dtype (under NumPy 2, float32 * np.float64(s) is float64;
      multiply by a Python float instead).

    Raise ValueError if q.shape[-1] != k.shape[-1], if k and v lengths differ, if the
    mask is not boolean or does not broadcast to (..., L_q, L_k).
    """
    raise NotImplementedError("scaled_dot_product_attention is not written yet: see the chapter docs/sdpa.md")


def attention_weights(q, k, mask=None, is_causal=False, scale=None):
    """P = softmax(Q K^T * scale) over the visible keys, scale = 1/sqrt(d_k) by default.

    Shapes: q (..., L_q, d_k), k (..., L_k, d_k) -> p (..., L_q, L_k); leading dims broadcast.

    Each row of P is a probability distribution over the keys that query may see:
    entries >= 0, summing to 1. A hidden key (mask False, or j > i + (L_k - L_q) under
    `is_causal`) has weight exactly 0, and a row with no visible key is all 0 (never NaN).
    The same mask rules as scaled_dot_product_attention (True = may attend, bottom-right
    causal, mask AND causal); it is the P that scaled_dot_product_attention multiplies by v.

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


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
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

    Raise ValueError if D % num_heads != 0 (say both numbers), num_heads < 1, a weight or
    bias has the wrong shape, or the mask is not boolean or does not broadcast.
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
