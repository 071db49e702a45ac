"""Each document's last token also attends to the next document of the packed row.

Caught by MALG-2: with segment ids, a query sees only the keys of its own document, so a packed
row equals each document run alone. Here a document boundary is found one token late on the
query side (the id of position i + 1 is read for the last query of each document, as a `cu_seqlens`
offset used inclusively does), so that query reads the next document as well.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _segment_ids

BUG = ("finding document boundaries one token late on the query side, so the last query of each "
       "document is also given the next document's id and attends to that document's keys")
CAUGHT_BY = "MALG-2"


def _document_visible(q_segment_ids, kv_segment_ids, L_q, L_k):
    q_seg = q_segment_ids if q_segment_ids is not None else kv_segment_ids
    kv_seg = kv_segment_ids if kv_segment_ids is not None else q_segment_ids
    q_seg, kv_seg = _segment_ids(q_seg, L_q, "q_segment_ids"), _segment_ids(kv_seg, L_k, "kv_segment_ids")
    following = np.concatenate([q_seg[..., 1:], q_seg[..., -1:]], axis=-1)   # BUG: the id one position later
    same = q_seg[..., :, None] == kv_seg[..., None, :]
    return same | (following[..., :, None] == kv_seg[..., None, :])


_base.rewire(globals())
