"""Worked example: the sinusoidal table for 4 positions and D = 6; RoPE keeps norms and makes scores relative."""
import numpy as np

from reference import rotary_embedding, sinusoidal_positional_encoding

np.set_printoptions(precision=4, suppress=True)

pe = sinusoidal_positional_encoding(4, 6)  # (length, D)
print("PE =")
print(pe)
# By hand: PE[1, 2] = sin(1 / 10000^(2/6)) = sin(0.0464), PE[1, 3] = cos(0.0464).
print("by hand PE[1, 2:4] =", np.round([np.sin(10000 ** (-2 / 6)), np.cos(10000 ** (-2 / 6))], 4))

# RoPE on d = 4: rotate q at position m and k at position n.
q = np.array([[1.0, 2.0, 3.0, 4.0]])
k = np.array([[0.5, -1.0, 2.0, 0.0]])
for m, n in [(0, 0), (3, 1), (7, 5), (2, 4)]:
    rq, rk = rotary_embedding(q, [m]), rotary_embedding(k, [n])
    print(f"m={m}, n={n}: |rope(q)| = {np.linalg.norm(rq):.4f}, <rope(q), rope(k)> = {(rq @ rk.T).item():.4f}")
