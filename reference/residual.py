"""Residual blocks and where the LayerNorm goes (lecture note 2 §3.3 and its closing paragraph; Xiong et al. 2020).

    Post-LN (Vaswani et al. 2017):  x ← LN(x + sublayer(x))        normalise after adding
    Pre-LN  (GPT-2 and most since): x ← x + sublayer(LN(x))        normalise the branch only

    x ∈ R^{B × L × D}; sublayer: R^{B × L × D} -> R^{B × L × D} (multi-head attention, or the
    position-wise feed-forward network FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, W_1 ∈ R^{D × F})

Both keep the shape (B, L, D): that is why the attention output must be L × D (lecture note 1
§5). They differ in the gradient path. Pre-LN leaves an identity path from the last layer
to the first (x_L = x_0 + Σ branches), so gradients arrive at every layer at a similar size;
Post-LN puts an LN on that path after every layer, and at initialisation its gradients are
largest near the output and shrink toward the input, which is why it needs a learning-rate
warm-up (claim RES-2, measured in docs/residual.md). A Pre-LN stack ends with one more LN.
"""

import numpy as np

from reference.layer_norm import layer_norm
from reference.multi_head import multi_head_attention


# --8<-- [start:blocks]
def post_ln_block(x, sublayer, gamma, beta, eps=1e-5):
    """Post-LN: LN(x + sublayer(x)); (B, L, D) -> (B, L, D)."""
    return layer_norm(x + sublayer(x), gamma, beta, eps)


def pre_ln_block(x, sublayer, gamma, beta, eps=1e-5):
    """Pre-LN: x + sublayer(LN(x)); (B, L, D) -> (B, L, D)."""
    return x + sublayer(layer_norm(x, gamma, beta, eps))
# --8<-- [end:blocks]


def residual_block(x, sublayer, norm, norm_first: bool):
    """Pre-LN x + sublayer(norm(x)) when norm_first, else Post-LN norm(x + sublayer(x)), with the norm given (a
    function of x alone: the reference's LayerNorm or an implementation's); (B, L, D) -> (B, L, D)."""
    if norm_first:
        return x + sublayer(norm(x))  # Pre-LN
    return norm(x + sublayer(x))  # Post-LN


# --8<-- [start:encoder_layer]
def feed_forward(x, w_1, b_1, w_2, b_2):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2; (B, L, D) -> (B, L, F) -> (B, L, D)."""
    return np.maximum(x @ w_1 + b_1, 0.0) @ w_2 + b_2


def encoder_layer(x, params, num_heads, norm_first, mask=None, is_causal=False):
    """One Transformer layer, self-attention then FFN, each in a Pre-LN or Post-LN residual block; (B, L, D)."""
    block = pre_ln_block if norm_first else post_ln_block

    def attention(h):
        return multi_head_attention(h, h, h, params["attention"], num_heads, mask=mask, is_causal=is_causal)

    def ffn(h):
        return feed_forward(h, *(params[n] for n in ("w_1", "b_1", "w_2", "b_2")))

    x = block(x, attention, params["gamma_1"], params["beta_1"])  # (B, L, D)
    return block(x, ffn, params["gamma_2"], params["beta_2"])  # (B, L, D)
# --8<-- [end:encoder_layer]
