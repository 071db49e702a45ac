"""Multi-head attention around any attention kernel, for the implementations that bring their own kernel.

    MultiHead(Q, K, V) = Concat(head_1, ..., head_H) W^O + b_O,   head_h = Attention(Q W_h^Q, K W_h^K, V W_h^V)

with the contract's (D, D) weights used as x @ W + b (CONTRACT.md). `attend` gets the heads as
(B, H, L, d_k) arrays and returns (B, H, L_q, d_k); `linear`, `split_heads` and `merge_heads`
are the backend's (NumPy or PyTorch).
"""


def multi_head(query, key, value, weights, num_heads, attend, linear, split_heads, merge_heads):
    """query (B, L_q, D), key/value (B, L_k, D) -> (B, L_q, D); inputs already checked."""
    # 1) project and split: (B, L, D) -> (B, H, L, d_k)
    q = split_heads(linear(query, weights["w_q"], weights.get("b_q")), num_heads)
    k = split_heads(linear(key, weights["w_k"], weights.get("b_k")), num_heads)
    v = split_heads(linear(value, weights["w_v"], weights.get("b_v")), num_heads)
    # 2) attend: (B, H, L_q, d_k)
    heads = attend(q, k, v)
    # 3) concat along the features, then W^O
    return linear(merge_heads(heads), weights["w_o"], weights.get("b_o"))  # (B, L_q, D)
