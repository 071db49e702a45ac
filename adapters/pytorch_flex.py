"""PyTorch's FlexAttention, `torch.nn.attention.flex_attention.flex_attention`, run eagerly on the CPU.

Conversions (as its documentation shows them):

- q, k, v (..., L, d) become (N, 1, L, d): the leading dimensions, broadcast, flattened into N.
- The contract's mask (True = may attend) is a `mask_mod` reading it, in a `BlockMask`; `is_causal=True` is the
  documentation's causal `mask_mod`, `q_idx >= kv_idx` (top-left aligned when L_q != L_k), and both together
  are `and_masks` of the two.
- A float bias is a `score_mod` adding it to the score.
- `attention_weights`: the output for V = I (P @ I = P).
- Out of scope: gradients (FlexAttention has no backward on the CPU: it raises NotImplementedError
  for inputs that require grad).

Speed: eager FlexAttention traces each call with TorchDynamo, once per mask_mod and score_mod function
and input shapes: the mods are module-level functions reading the call's mask and bias, and inputs are
padded to a few buckets of shapes (`_padded`, which says why no kept result changes), so a run traces
about twenty times instead of once per call. It evaluates the mods through `torch.vmap`, a few milliseconds
a call for each mod, so a call without a bias passes no score_mod (FlexAttention's own identity), and the
block mask of each padded shape is built once (`_block_mask`) instead of by `create_block_mask` on every
call, which evaluates the mask_mod over the whole grid only to find blocks to skip (the CPU's eager path
skips none). Each call runs on one intra-op thread (adapters/support/threads.py). None of this changes a
result.
"""

import functools
import math

import torch
from torch.nn.attention.flex_attention import BlockMask, and_masks, create_block_mask, flex_attention

from adapters.support.threads import one_thread
from spec_tests import OutOfScope

BACKEND = "torch"
DTYPES = ("float64", "float32")
CONTRACT = ("scaled_dot_product_attention", "attention_weights")


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


# Eager FlexAttention still traces its call with TorchDynamo (torch.compile, backend "eager"), and a new
# mask_mod or score_mod function, or new input shapes, is a new trace (over a second each). So the mods are
# the same functions on every call, reading the call's mask and bias from these module globals (a traced
# global tensor is an input of the trace, not a constant of it), and inputs are padded to a few shapes.
_mask = torch.ones(1, 1, 1, dtype=torch.bool)  # (N, L_q, L_k), True = may attend
_bias = torch.zeros(1, 1, 1)  # (N, L_q, L_k), added to the scores


def _mask_mod(b, h, q_idx, kv_idx):
    return _mask[b, q_idx, kv_idx]


def _bias_mod(score, b, h, q_idx, kv_idx):
    return score + _bias[b, q_idx, kv_idx]


_MASK_MODS = {(True, False): _mask_mod, (False, True): _causal, (True, True): and_masks(_mask_mod, _causal)}


def _bucket(n: int) -> int:
    """The smallest power of four, at least 16, that holds n."""
    size = 16
    while size < n:
        size *= 4
    return size


@functools.cache
def _block_mask(mask_mod, L_q: int, L_k: int) -> BlockMask:
    """The block mask of `mask_mod` for L_q queries and L_k keys as one block of L_q x L_k, listed as partial (as
    FlexAttention's own default block mask is one block): FlexAttention evaluates mask_mod at every position of
    a partial block, so the result is create_block_mask's, whose finer blocks only let a kernel skip blocks
    mask_mod hides whole (the CPU's eager path skips none), and whose block counts would change with the shape
    (a new trace). Batch and heads are one, broadcast over the call's: mask_mod reads the call's batch entry."""
    one_block, block_zero = torch.ones(1, 1, 1, dtype=torch.int32), torch.zeros(1, 1, 1, 1, dtype=torch.int32)
    return BlockMask.from_kv_blocks(one_block, block_zero, BLOCK_SIZE=(L_q, L_k), mask_mod=mask_mod,
                                    seq_lengths=(L_q, L_k))


def _flex(q, k, v, mask, is_causal, scale, bias):
    if any(x.requires_grad for x in (q, k, v)):
        raise OutOfScope("FlexAttention has no backward pass on the CPU")
    plain = (q.dim() >= 2 and k.dim() >= 2 and v.dim() >= 2 and q.dtype == k.dtype == v.dtype
             and q.dtype.is_floating_point and k.shape[-1] == q.shape[-1] and k.shape[-2] == v.shape[-2]
             and min(q.shape[-1:] + v.shape[-2:]) > 0 and (mask is None or mask.dtype == torch.bool)
             and (bias is None or bias.dtype.is_floating_point)
             and (q.shape[-2] > 0 or (mask is None and not is_causal and bias is None)))
    with one_thread():  # anything else as given: FlexAttention's own error or result
        return (_padded if plain else _as_given)(q, k, v, mask, is_causal, scale, bias)


def _fill(x, shape):
    """x in the leading corner of zeros of `shape`."""
    out = x.new_zeros(shape)
    out[tuple(slice(0, n) for n in x.shape)] = x
    return out


def _padded(q, k, v, mask, is_causal, scale, bias):
    """FlexAttention on the inputs padded to buckets of shapes (N, L_q, L_k, d_k, d_v each to a power of four,
    at least 16), which changes no result that is kept: padded keys are hidden by the mask (so a query that
    sees no real key still sees none), padded features of q and k are zeros (nothing added to a score; the
    default scale is passed as FlexAttention defines it, 1/sqrt(d_k) of the real d_k), padded queries, batch
    entries and value features are cut off, and padded positions of a bias are zeros. With no queries no result
    depends on a key, so padded keys need no hiding and no mask is passed; an input without queries but with a
    mask, causal flag or bias is given as it is (_as_given): FlexAttention's eager path fails to evaluate a
    mask_mod that reads a mask over zero queries (IndexError), and padding must not bring that about."""
    global _mask, _bias
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    (L_q, d_k), (L_k, d_v) = q.shape[-2:], v.shape[-2:]
    N = math.prod(lead)
    q, k, v = (x.expand(*lead, *x.shape[-2:]).reshape(N, *x.shape[-2:]) for x in (q, k, v))  # (N, L, d)
    Np, Lqp, Lkp, dkp, dvp = map(_bucket, (N, L_q, L_k, d_k, d_v))
    Lqp = Lqp if L_q else 0  # no queries: none is added, and no mask is passed (see above)
    allowed = torch.zeros(Np, Lqp, Lkp, dtype=torch.bool)
    allowed[:N, :L_q, :L_k] = True if mask is None else mask.expand(*lead, L_q, L_k).reshape(N, L_q, L_k)
    _mask, score_mod = allowed, None  # no score_mod: FlexAttention's identity, the score as it is
    if bias is not None:
        _bias, score_mod = torch.zeros(Np, Lqp, Lkp, dtype=q.dtype), _bias_mod
        _bias[:N, :L_q, :L_k] = bias.to(q.dtype).expand(*lead, L_q, L_k).reshape(N, L_q, L_k)
    out = flex_attention(_fill(q, (Np, Lqp, dkp))[:, None], _fill(k, (Np, Lkp, dkp))[:, None],
                         _fill(v, (Np, Lkp, dvp))[:, None], score_mod=score_mod,
                         block_mask=_block_mask(_MASK_MODS[True, bool(is_causal)], Lqp, Lkp) if L_q else None,
                         scale=d_k ** -0.5 if scale is None else scale)  # (Np, 1, Lqp, dvp)
    return out[:N, 0, :L_q, :d_v].reshape(*lead, L_q, d_v)


def _as_given(q, k, v, mask, is_causal, scale, bias):
    """FlexAttention on the inputs as they are (an input the padding might not keep as it is)."""
    global _mask, _bias
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    L_q, L_k = q.shape[-2], k.shape[-2]
    N = math.prod(lead)  # (not -1: an empty input cannot tell reshape its size)
    q, k, v = (x.expand(*lead, *x.shape[-2:]).reshape(N, 1, *x.shape[-2:]) for x in (q, k, v))  # (N, 1, L, d)
    block_mask = None
    if mask is not None or is_causal:
        if mask is not None:
            _mask = mask.expand(*lead, L_q, L_k).reshape(N, L_q, L_k)
        block_mask = create_block_mask(_MASK_MODS[mask is not None, bool(is_causal)], N, None, L_q, L_k, device="cpu")
    score_mod = None
    if bias is not None:
        _bias = bias.to(q.dtype).expand(*lead, L_q, L_k).reshape(N, L_q, L_k)
        score_mod = _bias_mod
    out = flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=scale)  # (N, 1, L_q, d_v)
    return out.reshape(*lead, L_q, out.shape[-1])


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None):
    """flex_attention(q, k, v, score_mod, block_mask, scale): (..., L_q, d_v)."""
    return _flex(q, k, v, mask, is_causal, scale, bias)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None):
    """The output for V = I (L_k, L_k): the weights, (..., L_q, L_k)."""
    return _flex(q, k, torch.eye(k.shape[-2], dtype=q.dtype), mask, is_causal, scale, bias)
