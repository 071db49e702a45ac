"""Worked example: a causal window, a window for a decoding step, packed documents, prefix-LM, and an AND."""
import numpy as np

from reference import causal_mask, scaled_dot_product_attention
from reference.mask_algebra import document_mask, prefix_lm_mask, segment_ids_from_lengths, window_mask

np.set_printoptions(precision=4, suppress=True)

# A causal window of 2 keys back: each query sees itself and the 2 before it.
print("window_mask(5, 5, (2, 0)) =")
print(window_mask(5, 5, (2, 0)).astype(int))

# One decoding step against a cache of 5 keys: the query sits at position 4 (bottom-right).
print("window_mask(1, 5, (2, 0)) =")
print(window_mask(1, 5, (2, 0)).astype(int))

# Documents of lengths 2 and 3 packed in one row of 5: a block-diagonal mask.
seg = segment_ids_from_lengths([2, 3])
print("segment ids =", seg)
print("document_mask AND causal =")
print((document_mask(seg, seg) & causal_mask(5, 5)).astype(int))

# The packed row equals each document alone: compare the second document's outputs.
rng = np.random.default_rng(0)
q, k, v = rng.standard_normal((5, 2)), rng.standard_normal((5, 2)), rng.standard_normal((5, 1))
packed = scaled_dot_product_attention(q, k, v, is_causal=True, q_segment_ids=seg, kv_segment_ids=seg)
alone = scaled_dot_product_attention(q[2:], k[2:], v[2:], is_causal=True)
print("packed, positions 2..4:", packed[2:, 0])
print("alone,  positions 2..4:", alone[:, 0])

# Prefix-LM with a prefix of 2: an OR, passed as mask=.
print("prefix_lm_mask(5, 2) =")
print(prefix_lm_mask(5, 2).astype(int))
