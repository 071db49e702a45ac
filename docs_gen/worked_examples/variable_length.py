"""Worked example: one set of weights, two lengths; a padded batch against each sequence alone."""
import numpy as np

from reference import multi_head_attention, padding_mask

np.set_printoptions(precision=4, suppress=True)

rng = np.random.default_rng(0)
D, H = 4, 2
weights = {name: rng.standard_normal((D, D)) / 2 for name in ("w_q", "w_k", "w_v", "w_o")}

short = rng.standard_normal((1, 2, D))  # a sequence of 2 tokens
long = rng.standard_normal((1, 3, D))  # a sequence of 3 tokens
for x in (short, long):
    print("input", x.shape, "-> output", multi_head_attention(x, x, x, weights, H).shape)

# Pad the short sequence to length 3 and batch it with the long one.
batch = np.concatenate([np.concatenate([short, np.full((1, 1, D), 99.0)], axis=1), long])  # (2, 3, D)
mask = padding_mask([2, 3], 3)  # (2, 1, 1, 3)
batched = multi_head_attention(batch, batch, batch, weights, H, mask=mask)
alone = multi_head_attention(short, short, short, weights, H)
print("batched, sequence 0, real positions =")
print(batched[0, :2])
print("alone =")
print(alone[0])
# Equal up to rounding: a batch of 2 may take another summation order than a batch of 1.
print("same up to rounding:", np.allclose(batched[0, :2], alone[0], rtol=0, atol=1e-12))
