"""Decoding with a key/value cache (claim MASK-3; with grouped-query attention, claim MHA-9).

    step t:  q_t = x_t W^Q,  k_t = x_t W^K,  v_t = x_t W^V        only the new token is projected
             cache ← cache ∪ {(k_t, v_t)}                         the keys and values of tokens 0 .. t
             out_t = Attention(q_t, K_{0..t}, V_{0..t}) W^O        the new query against the whole cache

    cache keys and values: (B, G, T, d_k) each, G = num_kv_heads (= H for multi-head attention)

Each token's K/V are computed once and kept; a step costs O(T) instead of recomputing
all T tokens. A prefill (several new tokens at once) attends with `is_causal=True`,
whose bottom-right alignment makes the new queries the last positions of the cache:
query i of the chunk sees every cached key up to its own position. Prefill plus steps
reproduces full causal self-attention exactly (up to rounding). The cache holds
2 · B · G · T · d_k numbers per layer: H / G times fewer with grouped-query attention.
"""

from dataclasses import dataclass

import numpy as np

from reference.attention import scaled_dot_product_attention
from reference.grouped_query import repeat_kv_heads
from reference.heads import merge_heads, split_heads


@dataclass
class KVCache:
    """One layer's cache: keys and values of every token so far, (B, G, T, d_k) each."""

    keys: np.ndarray | None = None
    values: np.ndarray | None = None

    def append(self, k, v):
        """Add the new tokens' k, v (B, G, T_new, d_k) after the cached ones."""
        self.keys = k if self.keys is None else np.concatenate([self.keys, k], axis=-2)  # (B, G, T, d_k)
        self.values = v if self.values is None else np.concatenate([self.values, v], axis=-2)

    def __len__(self) -> int:
        return 0 if self.keys is None else self.keys.shape[-2]

    @property
    def size(self) -> int:
        """How many numbers the cache holds: 2 · B · G · T · d_k."""
        return 0 if self.keys is None else self.keys.size + self.values.size


# --8<-- [start:attend_with_cache]
def attend_with_cache(x_new, weights, num_heads, cache: KVCache, num_kv_heads=None):
    """Self-attention outputs for the next tokens x_new (B, T_new, D), appending their K/V to `cache`; -> (B, T_new, D)."""
    G = num_heads if num_kv_heads is None else num_kv_heads

    def project(name):  # x_new W + b, only for the new tokens
        y = x_new @ weights[f"w_{name}"]
        return y if weights.get(f"b_{name}") is None else y + weights[f"b_{name}"]

    q = split_heads(project("q"), num_heads)  # (B, H, T_new, d_k)
    cache.append(split_heads(project("k"), G), split_heads(project("v"), G))  # cache: (B, G, T, d_k)
    k, v = repeat_kv_heads(cache.keys, num_heads), repeat_kv_heads(cache.values, num_heads)  # (B, H, T, d_k)
    heads = scaled_dot_product_attention(q, k, v, is_causal=True)  # bottom-right: new token t sees 0..t
    out = merge_heads(heads) @ weights["w_o"]  # (B, T_new, D)
    return out if weights.get("b_o") is None else out + weights["b_o"]
# --8<-- [end:attend_with_cache]


# --8<-- [start:decode]
def decode(x, weights, num_heads, num_kv_heads=None, prefill=1):
    """Causal self-attention over x (B, L, D) by a prefill of `prefill` tokens, then one token per step; (outputs, cache)."""
    cache = KVCache()
    outputs = [attend_with_cache(x[:, :prefill], weights, num_heads, cache, num_kv_heads)]  # (B, prefill, D)
    for t in range(prefill, x.shape[1]):
        outputs.append(attend_with_cache(x[:, t:t + 1], weights, num_heads, cache, num_kv_heads))  # (B, 1, D)
    return np.concatenate(outputs, axis=1), cache  # (B, L, D)
# --8<-- [end:decode]
