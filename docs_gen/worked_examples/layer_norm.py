"""Worked example: LayerNorm of the row [1, 0, 0, 0] by hand, and BatchNorm's dependence on the batch."""
import numpy as np

from reference import BatchNorm, layer_norm

np.set_printoptions(precision=4, suppress=True)

x = np.array([[1.0, 0.0, 0.0, 0.0],
              [2.0, 4.0, 6.0, 8.0]])
y = layer_norm(x, gamma=np.ones(4), beta=np.zeros(4))
print("layer_norm(x) =")
print(y)
# By hand, row 0: mean 1/4, biased variance 3/16, so (1 - 1/4) / sqrt(3/16 + 1e-5) ~ 1.732.
print("by hand:", round(0.75 / np.sqrt(3 / 16 + 1e-5), 4))
print("row means:", y.mean(axis=-1).round(4) + 0.0, " row variances:", y.var(axis=-1))
# The unbiased std with eps on the std (LN-6's wrong formula) gives 1.5 instead:
print("unbiased std, eps outside:", round(0.75 / (x[0].std(ddof=1) + 1e-5), 4))

# BatchNorm: the same sample normalises differently in a different batch.
bn = BatchNorm(4)
print("BatchNorm, row 0 with row 1 in the batch:", bn(x)[0])
print("BatchNorm, row 0 with itself twice:      ", bn(np.stack([x[0], x[0]]))[0])
print("LayerNorm, row 0 alone:                  ", layer_norm(x[:1], np.ones(4), np.zeros(4))[0])
