"""JAX's `jax.nn.dot_product_attention` (the XLA implementation, on the CPU), with float64 enabled
(`jax_enable_x64`).

Conversions (JAX's documentation: arrays are (B, T, N, H), batch, length, heads, features):

- q, k, v (..., L, d): the leading dimensions, broadcast, are flattened into B, with one head N = 1.
- The contract's boolean mask (True = may attend) is JAX's `mask`, same polarity; a float bias is
  JAX's `bias`, added to the scores.
- `is_causal` is JAX's flag, which is top-left aligned (j <= i) when L_q != L_k.
- `attention_weights`: the output for V = I (P @ I = P).

JAX compiles once per input shape (about half a second on the CPU), and the spec draws many shapes.
So that a run takes seconds, not minutes, every input is padded to a bucket of shapes and the function
is compiled once per bucket (jax.jit): batch, lengths and feature sizes are rounded up to a power of
four (at least 16: 16, 64, 256, ...), and compiled functions are kept on disk between runs and
processes (JAX's persistent compilation cache, in $MHA_SPEC_JAX_CACHE, by default ~/.cache/mha-spec-jax).
A run with an empty cache compiles a few dozen functions. The padding changes no result that is kept:

- padded queries, batch entries and value features are extra rows and columns, cut off afterwards;
- padded query features (of q and k) are zeros, which add nothing to a score; the default scale is
  then passed as JAX defines it, 1/sqrt(d_k) of the unpadded d_k. JAX takes a single feature size
  for q, k and v, so the padding gives q, k and v the same one (d_v != d_k is legal in the contract);
- padded keys are hidden by the mask (so an input without a mask runs JAX's masked path); a query
  that sees no key gets JAX's uniform weights over all keys, so the padded rows of v are the mean
  of its real rows, and that query's output is still the mean of v over the real keys.
"""

import functools
import math
import os
import sys

import numpy as np

# One compute thread (a speed setting, read by XLA once, when JAX starts): on the spec's small inputs a
# call computes for about a millisecond, and on a shared machine handing it to XLA's thread pool and back
# costs many times that in waiting (200 ms against 60 ms a call, measured on the 2-core machine under load).
if "jax" not in sys.modules:
    os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), "--xla_cpu_multi_thread_eigen=false",
                                        "intra_op_parallelism_threads=1"]).strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_compilation_cache_dir",
                  os.environ.get("MHA_SPEC_JAX_CACHE", os.path.expanduser("~/.cache/mha-spec-jax")))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)

BACKEND = "numpy"
DTYPES = ("float64", "float32")
CONTRACT = ("scaled_dot_product_attention", "attention_weights")


def _bucket(n: int) -> int:
    """The smallest power of four, at least 16, that holds n."""
    size = 16
    while size < n:
        size *= 4
    return size


@functools.partial(jax.jit, static_argnames=("is_causal",))
def _dpa(q, k, v, bias, mask, scale, is_causal):
    return jax.nn.dot_product_attention(q, k, v, bias=bias, mask=mask, scale=scale, is_causal=is_causal)


def _pad(x, shape):
    return np.pad(x, [(0, s - n) for n, s in zip(x.shape, shape)])


def _attend(q, k, v, mask, is_causal, scale, bias):
    dtype = np.result_type(q, k, v)
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    L_q, d_k = q.shape[-2:]
    L_k, d_v = v.shape[-2:]
    if k.shape[-1] != d_k or k.shape[-2] != L_k:  # bad input: JAX's own error, unpadded
        return np.asarray(jax.nn.dot_product_attention(q[..., None, :], k[..., None, :], v[..., None, :]))
    B = math.prod(lead)  # (not -1: an empty input cannot tell reshape its size)
    q, k, v = (np.broadcast_to(x, (*lead, *x.shape[-2:])).reshape(B, *x.shape[-2:]) for x in (q, k, v))
    if min(B, L_q, L_k, d_k, d_v) == 0:  # an empty input: JAX's own result, padded only to one feature size
        D = max(d_k, d_v)
        q, k, v = (_pad(x, (*x.shape[:-1], D)) for x in (q, k, v))
        return np.asarray(jax.nn.dot_product_attention(
            q[:, :, None], k[:, :, None], v[:, :, None], is_causal=is_causal,
            scale=1.0 / math.sqrt(max(d_k, 1)) if scale is None else float(scale),
            mask=None if mask is None else np.broadcast_to(mask, (*lead, L_q, L_k)).reshape(B, 1, L_q, L_k),
            bias=None if bias is None else np.broadcast_to(bias, (*lead, L_q, L_k)).reshape(B, 1, L_q, L_k))
        )[:, :, 0, :d_v].reshape(*lead, L_q, d_v).astype(dtype)
    Bp, Lqp, Lkp = map(_bucket, (B, L_q, L_k))
    dkp = dvp = _bucket(max(d_k, d_v))  # JAX takes one feature size for q, k and v
    allowed = np.ones((B, L_q, L_k), bool) if mask is None else \
        np.broadcast_to(mask, (*lead, L_q, L_k)).reshape(B, L_q, L_k)
    vp = np.broadcast_to(v.mean(axis=-2, keepdims=True), (B, Lkp, d_v)).astype(dtype)  # padded keys: mean of v
    vp[:, :L_k] = v
    args = dict(
        q=_pad(q, (Bp, Lqp, dkp))[:, :, None, :], k=_pad(k, (Bp, Lkp, dkp))[:, :, None, :],
        v=_pad(vp, (Bp, Lkp, dvp))[:, :, None, :],
        mask=_pad(allowed, (Bp, Lqp, Lkp))[:, None],
        bias=None if bias is None else _pad(np.broadcast_to(bias, (*lead, L_q, L_k)).reshape(B, L_q, L_k).astype(dtype),
                                            (Bp, Lqp, Lkp))[:, None],
        scale=1.0 / math.sqrt(d_k) if scale is None else float(scale))
    out = _dpa(**{n: a if n == "scale" or a is None else jnp.asarray(a) for n, a in args.items()}, is_causal=is_causal)
    return np.asarray(out)[:B, :L_q, 0, :d_v].reshape(*lead, L_q, d_v).astype(dtype)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None):
    """jax.nn.dot_product_attention(q, k, v, bias, mask, scale=..., is_causal=...): (..., L_q, d_v)."""
    return _attend(q, k, v, mask, is_causal, scale, bias)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None):
    """The output for V = I (L_k, L_k): the weights, (..., L_q, L_k)."""
    return _attend(q, k, np.eye(k.shape[-2], dtype=q.dtype), mask, is_causal, scale, bias)
