"""Worked example: attention dropout on one row of weights, reproducible from a generator."""
import numpy as np

from reference import attention_weights
from reference.dropout import dropout

np.set_printoptions(precision=4, suppress=True)

# One query, four keys with equal scores: each weight is 0.25 before dropout.
q, k = np.zeros((1, 2)), np.ones((4, 2))
p = attention_weights(q, k)
print("weights           =", p[0])

# p = 0.5: each weight kept with probability 0.5 and doubled, or dropped to exactly 0.
dropped = dropout(p, 0.5, np.random.default_rng(0))
print("dropout_p=0.5     =", dropped[0])
print("by hand: 0.25 / (1 - 0.5) =", 0.25 / 0.5)

# The same generator state gives the same pattern; another state another one.
print("same state again  =", dropout(p, 0.5, np.random.default_rng(0))[0])
print("another state     =", dropout(p, 0.5, np.random.default_rng(1))[0])

# Unbiased: averaged over many draws, each weight comes back to 0.25 and the row to a sum of 1.
rng = np.random.default_rng(2)
mean = np.mean([dropout(p, 0.5, rng) for _ in range(20000)], axis=0)
print("mean of 20000     =", mean[0], " row sum", round(float(mean.sum()), 3))

# dropout_p = 0 is the identity, and the rate must be in [0, 1).
print("dropout_p=0       =", dropout(p, 0.0)[0])
try:
    dropout(p, 1.0)
except ValueError as exc:
    print("ValueError:", exc)
