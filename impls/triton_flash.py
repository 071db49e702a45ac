"""A flash-attention forward kernel of our own, in Triton (lecture note 2 §4.1, §4.3); follows CONTRACT.md.

One program computes one block of queries of one (batch, head) slice: it keeps the
block's Q in registers, streams the keys and values past in blocks, and updates the
online softmax (numpy_chunked's docstring has the rule) in float32:

    S   = scale * Q K_j^T                          (tl.dot, float32 accumulator)
    m'  = max(m, rowmax S),  P = exp(S - m'),  alpha = exp(m - m')
    l'  = alpha l + rowsum P,  acc' = alpha acc + P V_j
    out = acc / l   (0 where l = 0: a query with no visible key)

so the L_q x L_k matrix never exists, in any memory. Hidden keys (mask False, beyond the
bottom-right causal diagonal, or past the end of the sequence) get S = -inf, an exact 0
weight; key blocks wholly above the causal diagonal are never loaded.

Where it runs:
- on a CUDA GPU, compiled (DEVICE = "cuda"; float32 with IEEE dot products, float16, bfloat16);
- on a machine without one, in Triton's interpreter (DEVICE = "cpu"; float32 and float16: the
  interpreter has no bfloat16), so that the spec checks the kernel for real on small shapes. The
  interpreter runs each program in Python, tens of milliseconds per key block, so it is opt-in:
  with MHA_SPEC_TRITON_INTERPRET=1 set, importing this module sets TRITON_INTERPRET=1 (unless
  Triton is already imported), which turns the interpreter on for the whole process; without it,
  the suite reports this implementation as unavailable, with that reason. CI runs the efficient
  and precision chapters on it this way.
Without Triton installed the module does not import and the suite reports it as unavailable.

Block sizes: `scaled_dot_product_attention` and `multi_head_attention` take `block_q` and
`block_k`, any size >= 1 (None: BLOCK_Q x BLOCK_K = 64 x 64). A block
is a logical size: the tile the kernel computes on is the next power of two (at least 16,
what tl.dot needs), and the lanes past the block are masked off.
"""

import math
import os
import sys

import torch

ON_GPU = torch.cuda.is_available()
OPT_IN = "MHA_SPEC_TRITON_INTERPRET"  # =1: run the kernel in Triton's interpreter when there is no GPU
_INTERPRET = not ON_GPU and "1" in (os.environ.get(OPT_IN), os.environ.get("TRITON_INTERPRET"))
if _INTERPRET and "triton" not in sys.modules:
    # Triton reads TRITON_INTERPRET when it is imported: its own helpers (tl.zeros, tl.max, ...)
    # are then interpreted too. Set here, it holds for this process and its children.
    os.environ["TRITON_INTERPRET"] = "1"

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from impls import torch_sdpa  # noqa: E402
from impls._heads import multi_head  # noqa: E402
from impls._tiling import block_sizes  # noqa: E402
from impls.torch_sdpa import merge_heads, split_heads  # noqa: E402
from reference.checks import check_attention, check_multi_head  # noqa: E402

BACKEND = "torch"
DEVICE = "cuda" if ON_GPU else "cpu"
DTYPES = ("float32", "float16", "bfloat16") if ON_GPU else ("float32", "float16")
# The part of the contract this kernel implements: the claims of other functions are "not applicable".
CONTRACT = ("scaled_dot_product_attention", "multi_head_attention")
FLASH_KERNEL = True  # a tiled kernel that never forms the L_q x L_k scores: EFF-3 applies
if not ON_GPU and not _INTERPRET:
    UNAVAILABLE = (f"no CUDA GPU; Triton's interpreter can run this kernel on the CPU, but slowly (tens of ms "
                   f"per program and key block), so only when {OPT_IN}=1 is set")
elif not ON_GPU and not triton.knobs.runtime.interpret:
    UNAVAILABLE = (f"{OPT_IN}=1 is set, but Triton was imported before this module with its interpreter "
                   "off: set TRITON_INTERPRET=1 as well")

BLOCK_Q = 64  # queries per program
BLOCK_K = 64  # keys per step of a program's loop

__all__ = ["BACKEND", "DEVICE", "DTYPES", "BLOCK_Q", "BLOCK_K", "merge_heads", "multi_head_attention",
           "scaled_dot_product_attention", "split_heads"]


def _flash_forward(Q, K, V, Out, Mask, MaskBase,
                   stride_qn, stride_qm, stride_kn, stride_km, stride_vn, stride_vm, stride_on, stride_om,
                   stride_mr, stride_mc,
                   L_q, L_k, d_k, d_v, scale, causal_offset, STEP_M, STEP_N,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_DK: tl.constexpr, BLOCK_DV: tl.constexpr,
                   HAS_MASK: tl.constexpr, IS_CAUSAL: tl.constexpr, IEEE: tl.constexpr):
    """Program (i, n): out[n, i*STEP_M : (i+1)*STEP_M] by online softmax over key blocks of STEP_N.

    STEP_M, STEP_N (the logical blocks) are runtime values, so that block sizes compile once per
    power-of-two tile BLOCK_M, BLOCK_N (>= STEP), not once per size.
    """
    pid_m = tl.program_id(0)
    n = tl.program_id(1).to(tl.int64)
    rows = tl.arange(0, BLOCK_M)
    offs_m = pid_m * STEP_M + rows  # (BLOCK_M,) query positions
    row_ok = (rows < STEP_M) & (offs_m < L_q)
    offs_dk = tl.arange(0, BLOCK_DK)
    offs_dv = tl.arange(0, BLOCK_DV)
    q = tl.load(Q + n * stride_qn + offs_m[:, None] * stride_qm + offs_dk[None, :],
                mask=row_ok[:, None] & (offs_dk[None, :] < d_k), other=0.0)  # (BLOCK_M, BLOCK_DK)

    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)  # running max
    l_i = tl.zeros((BLOCK_M,), tl.float32)  # running sum of exp(s - m)
    acc = tl.zeros((BLOCK_M, BLOCK_DV), tl.float32)  # running sum of exp(s - m) v

    end = L_k
    if IS_CAUSAL:  # the last query of the block sees keys j <= its position + offset: later blocks never come
        last_row = tl.minimum(pid_m * STEP_M + STEP_M, L_q) - 1
        end = tl.maximum(tl.minimum(L_k, last_row + causal_offset + 1), 0)
    if HAS_MASK:
        mask_base = tl.load(MaskBase + n)  # where this slice's (possibly broadcast) mask starts
    cols = tl.arange(0, BLOCK_N)
    for start in range(0, end, STEP_N):
        offs_n = start + cols  # (BLOCK_N,) key positions
        col_ok = (cols < STEP_N) & (offs_n < L_k)
        k = tl.load(K + n * stride_kn + offs_n[:, None] * stride_km + offs_dk[None, :],
                    mask=col_ok[:, None] & (offs_dk[None, :] < d_k), other=0.0)  # (BLOCK_N, BLOCK_DK)
        v = tl.load(V + n * stride_vn + offs_n[:, None] * stride_vm + offs_dv[None, :],
                    mask=col_ok[:, None] & (offs_dv[None, :] < d_v), other=0.0)  # (BLOCK_N, BLOCK_DV)
        if IEEE:
            s = tl.dot(q, tl.trans(k), input_precision="ieee")
        else:
            s = tl.dot(q, tl.trans(k))
        s = s * scale  # (BLOCK_M, BLOCK_N), float32
        visible = row_ok[:, None] & col_ok[None, :]
        if IS_CAUSAL:
            visible = visible & (offs_n[None, :] <= offs_m[:, None] + causal_offset)  # bottom-right aligned
        if HAS_MASK:
            allowed = tl.load(Mask + mask_base + offs_m[:, None] * stride_mr + offs_n[None, :] * stride_mc,
                              mask=visible, other=0)
            visible = visible & (allowed != 0)
        s = tl.where(visible, s, float("-inf"))  # exp(-inf) = 0: an exact zero weight
        m_new = tl.maximum(m_i, tl.max(s, 1))
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row with nothing visible yet: no -inf + inf
        alpha = tl.exp(m_i - shift)
        p = tl.exp(s - shift[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        if IEEE:
            pv = tl.dot(p, v.to(tl.float32), input_precision="ieee")
        else:
            pv = tl.dot(p.to(v.dtype), v)  # P in the input's precision, as FlashAttention does
        acc = acc * alpha[:, None] + pv
        m_i = m_new
    out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]  # l = 0 only where acc = 0: no visible key, output 0
    tl.store(Out + n * stride_on + offs_m[:, None] * stride_om + offs_dv[None, :], out.to(Out.dtype.element_ty),
             mask=row_ok[:, None] & (offs_dv[None, :] < d_v))


# Compiled on a GPU (an interpreted function under TRITON_INTERPRET=1). Triton compiles again for each
# integer argument that turns 1 or divisible by 16; only the row strides (the head dims, which decide
# whether loads vectorise) keep that, so that lengths and blocks do not each cost a compilation.
_kernel = triton.jit(_flash_forward, do_not_specialize=[
    "stride_qn", "stride_kn", "stride_vn", "stride_on", "stride_mr", "stride_mc",
    "L_q", "L_k", "d_k", "d_v", "causal_offset", "STEP_M", "STEP_N"])


def _tile(n):
    """The power-of-two tile (at least 16, for tl.dot) that holds a logical block of n."""
    return max(16, triton.next_power_of_2(int(n)))


def _mask_bases(mask, lead, L_q, L_k):
    """The mask as bytes with its strides, and for each flattened batch index n the offset of its slice.

    A broadcast mask ((L_k,), (B, 1, 1, L_k), ...) is never expanded in memory: broadcast dims get stride 0.
    """
    m = mask if mask.dim() >= 2 else mask[None, :]
    m = m.expand(*lead, *m.shape[-2:])  # (*lead, L_q or 1, L_k or 1), a view
    stride_r = m.stride(-2) if m.shape[-2] > 1 else 0
    stride_c = m.stride(-1) if m.shape[-1] > 1 else 0
    base = torch.zeros((), dtype=torch.int64, device=mask.device)
    for size, stride in zip(lead, m.stride()[:-2]):  # offset of slice n = sum_d index_d * stride_d
        base = base[..., None] + torch.arange(size, device=mask.device) * stride
    return m.view(torch.uint8), base.reshape(-1).contiguous(), stride_r, stride_c


def _attend(q, k, v, mask, is_causal, scale, block_q, block_k):
    """The kernel over q (*lead, L_q, d_k), k (*lead, L_k, d_k), v (*lead, L_k, d_v); no input checks."""
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    L_q, L_k, d_k, d_v = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]

    def flat(x):  # (..., L, d) -> (N, L, d), contiguous (copies only to broadcast)
        return x.expand(*lead, *x.shape[-2:]).reshape(-1, *x.shape[-2:]).contiguous()

    q3, k3, v3 = flat(q), flat(k), flat(v)
    N = q3.shape[0]
    out = torch.empty(N, L_q, d_v, dtype=q.dtype, device=q.device)
    if N == 0 or L_q == 0 or d_v == 0:
        return out.reshape(*lead, L_q, d_v)
    step_m, step_n = block_sizes(block_q, block_k, BLOCK_Q, BLOCK_K)
    if mask is not None:
        mask_bytes, bases, stride_mr, stride_mc = _mask_bases(mask, lead, L_q, L_k)
    else:  # unused by the kernel (HAS_MASK=False); any tensor will do
        mask_bytes, bases, stride_mr, stride_mc = out, out, 0, 0
    grid = (triton.cdiv(L_q, step_m), N)
    _kernel[grid](
        q3, k3, v3, out, mask_bytes, bases,
        q3.stride(0), q3.stride(1), k3.stride(0), k3.stride(1), v3.stride(0), v3.stride(1),
        out.stride(0), out.stride(1), stride_mr, stride_mc,
        L_q, L_k, d_k, d_v, float(scale), L_k - L_q, step_m, step_n,
        BLOCK_M=_tile(step_m), BLOCK_N=_tile(step_n),
        BLOCK_DK=_tile(d_k), BLOCK_DV=_tile(d_v),
        HAS_MASK=mask is not None, IS_CAUSAL=bool(is_causal), IEEE=q.dtype == torch.float32,
    )
    return out.reshape(*lead, L_q, d_v)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, block_q=None, block_k=None):
    """softmax(Q K^T * scale) V by the flash kernel; q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v)."""
    check_attention(q, k, v, mask=mask)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return _attend(q, k, v, mask, is_causal, scale, block_q, block_k)


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False,
                         block_q=None, block_k=None):
    """Concat(head_1..head_H) W^O + b_O, heads by the flash kernel; query (B, L_q, D), key/value (B, L_k, D)."""
    d_k, _ = check_multi_head(query, key, value, weights, num_heads, mask)
    scale = 1.0 / math.sqrt(d_k)

    def attend(q, k, v):  # every (batch, head) slice and query block is one program
        return _attend(q, k, v, mask, is_causal, scale, block_q, block_k)

    return multi_head(query, key, value, weights, num_heads, attend, torch_sdpa._linear, split_heads, merge_heads)
