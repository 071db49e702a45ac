"""Worked example: Post-LN and Pre-LN blocks around the same sublayer; Xavier keeps the variance level."""
import numpy as np

from reference.init import xavier_uniform
from reference.residual import post_ln_block, pre_ln_block

np.set_printoptions(precision=4, suppress=True)

x = np.array([[[1.0, 2.0, 3.0, 4.0],
               [0.0, 0.0, 1.0, 1.0]]])  # (B, L, D) = (1, 2, 4)
gamma, beta = np.ones(4), np.zeros(4)


def sublayer(h):  # a stand-in for attention: doubles its input
    return 2.0 * h


post = post_ln_block(x, sublayer, gamma, beta)  # LN(x + 2x) = LN(3x) = LN(x)
pre = pre_ln_block(x, sublayer, gamma, beta)  # x + 2 LN(x)
print("Post-LN =")
print(post[0])
print("Pre-LN =")
print(pre[0])
print("shapes:", x.shape, post.shape, pre.shape)

# Xavier: 20 square projections in a row keep the activations' variance near 1.
rng = np.random.default_rng(0)
h = rng.standard_normal((1000, 64))
for layer in range(20):
    h = h @ xavier_uniform(rng, 64, 64)
print("variance after 20 Xavier layers:", round(h.var(), 4))
