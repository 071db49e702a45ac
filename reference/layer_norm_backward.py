"""The backward pass of LayerNorm: gradients by hand (claim GRAD-2; the forward pass is `reference.layer_norm`).

    forward:   x̂ = (x - μ) / σ,   σ = sqrt(var + ε),   y = γ ⊙ x̂ + β        over the last axis of x ∈ R^{... × D}
    backward, given dy = ∂loss/∂y ∈ R^{... × D}:
      ∂loss/∂β = Σ_rows dy                                              (D,)
      ∂loss/∂γ = Σ_rows dy ⊙ x̂                                          (D,)
      g        = dy ⊙ γ                                                 ∂loss/∂x̂
      ∂loss/∂x = (g - mean(g) - x̂ ⊙ mean(g ⊙ x̂)) / σ                    means over the D features of each row

The two subtracted means are what μ and σ feed back: moving every x_i by the same
amount changes nothing (so ∂loss/∂x sums to 0 over a row), and scaling a row changes
only ε's share of σ (so ∂loss/∂x is nearly orthogonal to x̂).
"""

import numpy as np

from reference.checks import check_layer_norm, shape_of


# --8<-- [start:layer_norm_backward]
def layer_norm_backward(dy, x, gamma, eps=1e-5):
    """(dx, dgamma, dbeta) of y = LayerNorm(x) given dy = ∂loss/∂y; dy, x (..., D) -> (..., D), (D,), (D,)."""
    check_layer_norm(x, gamma, gamma)  # beta does not enter the gradient; gamma stands in for it
    if shape_of(dy) != shape_of(x):
        raise ValueError(f"dy must have x's shape {shape_of(x)}, got {shape_of(dy)}")
    rows = tuple(range(x.ndim - 1))  # every axis but the features
    centred = x - x.mean(axis=-1, keepdims=True)  # (..., D)
    sigma = np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = centred / sigma  # (..., D)
    dbeta = dy.sum(axis=rows)  # (D,)
    dgamma = (dy * x_hat).sum(axis=rows)  # (D,)
    g = dy * gamma  # (..., D): ∂loss/∂x̂
    dx = (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) / sigma
    return dx, dgamma, dbeta
# --8<-- [end:layer_norm_backward]
