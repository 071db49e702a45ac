"""Multi-head attention (lecture note 1 §1–§3 and its formula; Vaswani et al. 2017, §3.2.2).

    MultiHead(Q, K, V) = Concat(head_1, ..., head_H) W^O + b_O
    head_h             = Attention(Q W_h^Q + b_h^Q, K W_h^K + b_h^K, V W_h^V + b_h^V)

    query ∈ R^{B × L_q × D}, key, value ∈ R^{B × L_k × D}
    W^Q, W^K, W^V, W^O ∈ R^{D × D}   in the y = x W + b orientation (the math's X W^Q),
                                     not nn.Linear's stored (out, in)
    W_h^Q = W^Q[:, h·d_k:(h+1)·d_k] ∈ R^{D × d_k}   head h's own block of columns
    W^O rows h·d_k:(h+1)·d_k take head h's output back to D
    d_k = D / H

Computing the fused D × D projection and then splitting is the same as running
H separate D × d_k projections (MHA-4); it is only faster.

With num_kv_heads = G < H (grouped-query attention, `reference.grouped_query`),
W^K and W^V are D × G·d_k and query head h reads K/V head h // (H / G).

`multi_head_attention_from` is the same four steps with the attention, the split and the merge
passed in: the same formula on other parts (an implementation's own, to judge it by).
"""

import numpy as np

from reference.attention import scaled_dot_product_attention
from reference.checks import check_multi_head
from reference.dropout import check_dropout_p
from reference.grouped_query import repeat_kv_heads
from reference.heads import merge_heads, split_heads


def _project(x, w, b):
    """y = x W + b; x (B, L, D), W (D, D') -> (B, L, D')."""
    y = x @ w
    return y if b is None else y + b


# --8<-- [start:multi_head_attention]
def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None,
                         window_size=None, q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None,
                         dropout_p=0.0, training=False, generator=None):
    """Concat(head_1..head_H) W^O + b_O; query (B, L_q, D), key/value (B, L_k, D) -> (B, L_q, D).

    window_size, softcap, sinks (H,) and segment ids (B, L_q), (B, L_k) reach every head's attention as they are
    (reference.mask_algebra, reference.softcap, reference.sinks): see head_keywords. dropout_p drops attention
    weights only when training=True (reference.dropout); in evaluation, the default, there is no dropout."""
    _, G = check_multi_head(query, key, value, weights, num_heads, mask, num_kv_heads)
    later = head_keywords(window_size, q_segment_ids, kv_segment_ids, softcap, sinks)
    if check_dropout_p(dropout_p) and training:  # evaluation (training=False) never drops
        later.update(dropout_p=dropout_p, generator=generator)
    # 1) project: one fused D x D matrix holds all H heads' D x d_k blocks (D x G*d_k for K, V)
    q = _project(query, weights["w_q"], weights.get("b_q"))  # (B, L_q, D)
    k = _project(key, weights["w_k"], weights.get("b_k"))  # (B, L_k, G*d_k)
    v = _project(value, weights["w_v"], weights.get("b_v"))  # (B, L_k, G*d_k)
    # 2) split: head h takes feature block h; K/V head g serves query heads g*H/G .. (g+1)*H/G - 1
    q = split_heads(q, num_heads)  # (B, H, L_q, d_k)
    k, v = (repeat_kv_heads(split_heads(t, G), num_heads) for t in (k, v))  # (B, G, L_k, d_k) -> (B, H, L_k, d_k)
    # 3) attend, every head at once; the mask broadcasts to (B, H, L_q, L_k)
    heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, **later)  # (B, H, L_q, d_k)
    # 4) concat along features, then W^O maps H*d_k back to D
    return _project(merge_heads(heads), weights["w_o"], weights.get("b_o"))  # (B, L_q, D)
# --8<-- [end:multi_head_attention]


# --8<-- [start:head_keywords]
def head_keywords(window_size=None, q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None) -> dict:
    """The later chapters' keywords as each head's scaled_dot_product_attention takes them (only those given).

    The window and the cap are the same for every head; sinks are one logit per head, (H,), which broadcasts
    against the heads' (B, H) leading dims; segment ids are one per token, (B, L), and gain a head axis,
    (B, 1, L), so that they broadcast against (B, H) too."""
    given = dict(window_size=window_size, softcap=softcap, sinks=sinks)
    for name, ids in (("q_segment_ids", q_segment_ids), ("kv_segment_ids", kv_segment_ids)):
        given[name] = None if ids is None else np.asarray(ids)[..., None, :]  # (B, L) -> (B, 1, L)
    return {name: value for name, value in given.items() if value is not None}
# --8<-- [end:head_keywords]


def multi_head_attention_from(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None,
                              window_size=None, q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None,
                              *, scaled_dot_product_attention=scaled_dot_product_attention, split_heads=split_heads,
                              merge_heads=merge_heads):
    """multi_head_attention's four steps on the attention, split and merge given (by default the reference's own:
    then it is multi_head_attention). Built on an implementation's own functions, it is the yardstick that charges
    a bug in one of them to that function's claims alone (spec_tests/harness/carried.py)."""
    _, G = check_multi_head(query, key, value, weights, num_heads, mask, num_kv_heads)
    q = _project(query, weights["w_q"], weights.get("b_q"))  # (B, L_q, D)
    k = _project(key, weights["w_k"], weights.get("b_k"))  # (B, L_k, G*d_k)
    v = _project(value, weights["w_v"], weights.get("b_v"))  # (B, L_k, G*d_k)
    q = split_heads(q, num_heads)  # (B, H, L_q, d_k)
    k, v = (repeat_kv_heads(split_heads(t, G), num_heads) for t in (k, v))  # (B, H, L_k, d_k)
    later = head_keywords(window_size, q_segment_ids, kv_segment_ids, softcap, sinks)
    heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, **later)  # (B, H, L_q, d_k)
    return _project(merge_heads(heads), weights["w_o"], weights.get("b_o"))  # (B, L_q, D)
