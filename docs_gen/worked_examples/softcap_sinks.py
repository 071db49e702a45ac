"""Worked example: softcapping a row of scores, and a sink's share of one row's weight."""
import numpy as np

from reference import attention_weights
from reference.softcap import softcap

np.set_printoptions(precision=4, suppress=True)

# Softcap squashes large scores into (-cap, cap) and leaves small ones almost as they are.
s = np.array([-20.0, -1.0, 0.0, 1.0, 20.0])
print("scores          =", s)
print("softcap(s, 5.0) =", softcap(s, 5.0))
print("by hand: 5 * tanh(1 / 5) =", round(5 * np.tanh(0.2), 4))

# One query, three keys with scores 0, 0, 0 (q = 0): a sink of logit 0 is a fourth equal share.
q, k = np.zeros((1, 2)), np.ones((3, 2))
print("weights, no sink       =", attention_weights(q, k)[0])
print("weights, sink 0        =", attention_weights(q, k, sinks=np.array(0.0))[0])
print("by hand: 1 / (3 + 1)   =", 1 / 4)
print("row sum with the sink  =", attention_weights(q, k, sinks=np.array(0.0)).sum())

# Every key hidden: the sink takes everything, and the row's weights are 0.
hidden = np.zeros((1, 3), dtype=bool)
print("all hidden, sink 0     =", attention_weights(q, k, mask=hidden, sinks=np.array(0.0))[0])
