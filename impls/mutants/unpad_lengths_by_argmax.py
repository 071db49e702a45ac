"""Multi-head attention given a right-padding mask (B, 1, 1, L_k) "unpads" the batch: it runs each sequence on its
real keys only, as variable-length kernels do. It finds each length as the position of the first padding key,
`argmax(~mask)`, and a sequence with no padding has no such position: argmax returns 0, and the batch's longest
sequence is run on no keys at all.

Caught by VAR-3: a padded batch must give each sequence's own result at its real positions; the sequence that
fills the padded length comes out as if every key were hidden. A mask that is not right padding, or a batch with
no padding, takes the dense path and is right.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _causal_visible

BUG = ("taking each sequence's length in a padded batch as argmax(~mask), the first padding position, which is 0 "
       "for a sequence with no padding (the longest one), so that sequence is run on no keys")
CAUGHT_BY = "VAR-3"
ALSO_CAUGHT_BY = ()   # MHA-7 meets it only when its drawn padded batch has a sequence of the full length


def _right_padded(keys):
    """(B, L_k) bool: is every row real keys first, padding after (True* False*)?"""
    return bool(np.all(keys[:, 1:] <= keys[:, :-1]))


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None,
                         window_size=None, q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None,
                         dropout_p=0.0, training=False, generator=None):
    later = {name: given for name, given in dict(
        num_kv_heads=num_kv_heads, window_size=window_size, q_segment_ids=q_segment_ids,
        kv_segment_ids=kv_segment_ids, softcap=softcap, sinks=sinks, generator=generator).items() if given is not None}
    if dropout_p or training:
        later.update(dropout_p=dropout_p, training=training)
    query, key, value = np.asarray(query), np.asarray(key), np.asarray(value)
    m = None if mask is None else np.asarray(mask)
    if (later or m is None or m.dtype != np.bool_ or m.ndim != 4 or m.shape[1:3] != (1, 1) or query.ndim != 3
            or m.shape[0] != query.shape[0] or m.shape[-1] != key.shape[1] or m.all() or not _right_padded(m[:, 0, 0])):
        return _base.multi_head_attention(query, key, value, weights, num_heads, mask=mask, is_causal=is_causal,
                                          **later)
    L_q, L_k = query.shape[1], key.shape[1]
    lengths = np.argmax(~m[:, 0, 0], axis=-1)   # BUG: 0 for a row with no padding key
    out = []
    for b, n in enumerate(lengths):
        causal = _causal_visible(L_q, L_k)[:, :n] if is_causal else None
        out.append(_base.multi_head_attention(query[b:b + 1], key[b:b + 1, :n], value[b:b + 1, :n], weights,
                                              num_heads, mask=causal))
    return np.concatenate(out)


_base.rewire(globals())
