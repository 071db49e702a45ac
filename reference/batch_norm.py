"""Batch normalisation, for contrast with LayerNorm (lecture note 2 §2.3; Ioffe & Szegedy 2015).

    training:  μ_f = mean over the batch (and positions) of feature f,  σ²_f likewise
               y = γ (x - μ) / sqrt(σ² + ε) + β,  and the running statistics move toward μ, σ²
    inference: y = γ (x - running_mean) / sqrt(running_var + ε) + β

    x ∈ R^{N × D} or R^{B × L × D}: statistics over every axis except the last (features)

Its output for one sample depends on the other samples in the batch, and it
behaves differently in training and inference: the two rows of lecture note 2 §2.3's
table that LayerNorm does not share (claim LN-8).
"""

from dataclasses import dataclass, field

import numpy as np


# --8<-- [start:batch_norm]
@dataclass
class BatchNorm:
    """A minimal BatchNorm over the last axis with running statistics (float64)."""

    num_features: int
    eps: float = 1e-5
    momentum: float = 0.1
    training: bool = True
    gamma: np.ndarray = field(default=None)
    beta: np.ndarray = field(default=None)

    def __post_init__(self):
        D = self.num_features
        self.gamma = np.ones(D) if self.gamma is None else np.asarray(self.gamma, dtype=float)
        self.beta = np.zeros(D) if self.beta is None else np.asarray(self.beta, dtype=float)
        self.running_mean = np.zeros(D)
        self.running_var = np.ones(D)

    def __call__(self, x):
        axes = tuple(range(x.ndim - 1))  # every axis but the features
        if self.training:
            mean = x.mean(axis=axes)  # (D,) shared by the whole batch
            var = x.var(axis=axes)  # (D,) biased, used to normalise
            n = x.size // x.shape[-1]
            unbiased = var * n / max(n - 1, 1)
            self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * mean
            self.running_var = (1 - self.momentum) * self.running_var + self.momentum * unbiased
        else:
            mean, var = self.running_mean, self.running_var
        return self.gamma * (x - mean) / np.sqrt(var + self.eps) + self.beta
# --8<-- [end:batch_norm]
