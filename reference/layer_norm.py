"""Layer normalisation (lecture note 2 §2.1; Ba et al. 2016).

    μ   = (1/D) Σ_i x_i                       mean over the features of one sample
    σ²  = (1/D) Σ_i (x_i - μ)²                biased (population) variance
    y_i = γ_i (x_i - μ) / sqrt(σ² + ε) + β_i  ε inside the square root

    x ∈ R^{... × D}, γ, β ∈ R^D, ε > 0 (default 1e-5)

Statistics are per sample: nothing is shared across the batch, and there is no
train/eval difference (unlike BatchNorm, see `reference.batch_norm`).
Note: lecture note 2 §2.2's code uses the *unbiased* std with ε added to the std,
which is not the formula above (claim LN-6 tells the two apart).
"""

import numpy as np

from reference.checks import check_layer_norm


# --8<-- [start:layer_norm]
def layer_norm(x, gamma, beta, eps=1e-5):
    """gamma * (x - mean) / sqrt(var + eps) + beta over the last axis; (..., D) -> (..., D)."""
    check_layer_norm(x, gamma, beta)
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    centred = x - mean  # (..., D); two passes: no E[x²] - E[x]² cancellation
    var = (centred * centred).mean(axis=-1, keepdims=True)  # (..., 1), divides by D, not D - 1
    return gamma * (centred / np.sqrt(var + eps)) + beta
# --8<-- [end:layer_norm]
