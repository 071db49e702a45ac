"""Xavier/Glorot initialisation (lecture note 2 §3.3; Glorot & Bengio 2010).

    W ∈ R^{fan_in × fan_out},   Var(W_ij) = 2 / (fan_in + fan_out)
    uniform: W_ij ~ U(-a, a) with a = sqrt(6 / (fan_in + fan_out))
    normal:  W_ij ~ N(0, 2 / (fan_in + fan_out))

For y = x W with x's entries independent, mean 0 and variance v, each y_j is a sum of
fan_in terms, so Var(y_j) = fan_in · v · Var(W_ij). For a square W (fan_in = fan_out = D)
that is exactly v: the variance of the activations stays level through any number of
projections, where unit-variance weights would multiply it by D at every layer (claim RES-3).
(The backward pass is scaled by fan_out · Var(W_ij); the harmonic mean in the formula
balances the two when fan_in ≠ fan_out.)
"""

import numpy as np


# --8<-- [start:xavier]
def xavier_uniform(rng: np.random.Generator, fan_in: int, fan_out: int) -> np.ndarray:
    """W ~ U(-a, a), a = sqrt(6 / (fan_in + fan_out)), so Var(W) = 2 / (fan_in + fan_out); (fan_in, fan_out)."""
    a = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-a, a, size=(fan_in, fan_out))


def xavier_normal(rng: np.random.Generator, fan_in: int, fan_out: int) -> np.ndarray:
    """W ~ N(0, 2 / (fan_in + fan_out)); (fan_in, fan_out)."""
    return rng.normal(0.0, np.sqrt(2.0 / (fan_in + fan_out)), size=(fan_in, fan_out))
# --8<-- [end:xavier]
