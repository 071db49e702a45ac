"""The later chapters' keywords of multi_head_attention, as each head's attention takes them.

    window_size, softcap      the same for every head                       as given
    sinks                     one logit per head, (H,)                      broadcasts against the heads' (B, H)
    q_segment_ids (B, L_q),   one per token                                 -> (B, 1, L_q), (B, 1, L_k): a head axis
    kv_segment_ids (B, L_k)

Only the keywords given are returned, so an attention without them is called as before. Works on
NumPy arrays and torch tensors alike (indexing only).
"""


def head_keywords(window_size=None, q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None) -> dict:
    given = dict(window_size=window_size, softcap=softcap, sinks=sinks)
    for name, ids in (("q_segment_ids", q_segment_ids), ("kv_segment_ids", kv_segment_ids)):
        given[name] = None if ids is None else ids[..., None, :]  # (B, L) -> (B, 1, L)
    return {name: value for name, value in given.items() if value is not None}
