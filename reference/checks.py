"""Input checks of the implementation contract (CONTRACT.md, "Bad input raises ValueError").

Every check names the offending values in its message, so that a learner who
passes a bad shape reads what was wrong, not only that something was.
The checks look only at `.shape` and `.dtype`, so they serve NumPy arrays and
torch tensors alike; the built-in implementations in `impls/` call them too.
"""

import numbers

import numpy as np


def shape_of(x) -> tuple[int, ...]:
    return tuple(int(n) for n in x.shape)


def is_bool(x) -> bool:
    """True for a NumPy or torch boolean array."""
    return str(x.dtype) in ("bool", "torch.bool")


# --8<-- [start:check_num_heads]
def check_num_heads(d_model: int, num_heads: int) -> int:
    """Return d_k = d_model / num_heads, or raise if the heads do not tile d_model."""
    if num_heads < 1:
        raise ValueError(f"num_heads must be at least 1, got num_heads={num_heads}")
    if d_model % num_heads != 0:
        raise ValueError(
            f"d_model={d_model} is not divisible by num_heads={num_heads}: "
            f"{d_model} = {num_heads} * {d_model // num_heads} + {d_model % num_heads}, "
            "so the heads cannot split the features evenly"
        )
    return d_model // num_heads
# --8<-- [end:check_num_heads]


# --8<-- [start:check_mask]
def broadcasts_to(x, shape: tuple[int, ...]) -> bool:
    """Does x broadcast to exactly `shape` (without making it any larger)?"""
    try:
        return np.broadcast_shapes(shape_of(x), shape) == shape
    except ValueError:
        return False


def check_mask(mask, scores_shape: tuple[int, ...]) -> None:
    """A mask is boolean (True = may attend) and broadcasts to the scores' shape."""
    if mask is None:
        return
    if not is_bool(mask):
        raise ValueError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
    if not broadcasts_to(mask, scores_shape):
        raise ValueError(
            f"mask of shape {shape_of(mask)} does not broadcast to the attention "
            f"scores' shape {scores_shape} (..., L_q, L_k)"
        )
# --8<-- [end:check_mask]


def check_attention(q, k, v=None, mask=None, bias=None) -> tuple[int, ...]:
    """Check q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v); return the scores' shape."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        if x is not None and len(x.shape) < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., L, d), got shape {shape_of(x)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same feature size d_k, got q.shape[-1]={q.shape[-1]} "
            f"and k.shape[-1]={k.shape[-1]}"
        )
    if v is not None and k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same length L_k, got k.shape[-2]={k.shape[-2]} "
            f"and v.shape[-2]={v.shape[-2]}"
        )
    leading = [shape_of(x)[:-2] for x in (q, k, v) if x is not None]
    try:
        batch = np.broadcast_shapes(*leading)
    except ValueError:
        raise ValueError(f"leading dimensions of q, k, v do not broadcast: {leading}") from None
    scores_shape = tuple(batch) + (int(q.shape[-2]), int(k.shape[-2]))
    check_mask(mask, scores_shape)
    if bias is not None:
        if is_bool(bias):
            raise ValueError("bias must be a float array added to the scores, got a boolean one: pass it as mask=")
        if not broadcasts_to(bias, scores_shape):
            raise ValueError(f"bias of shape {shape_of(bias)} does not broadcast to {scores_shape}")
    return scores_shape


def check_layer_norm(x, gamma, beta) -> None:
    """gamma and beta are (D,) where D = x.shape[-1]."""
    d = int(x.shape[-1])
    for name, p in (("gamma", gamma), ("beta", beta)):
        if shape_of(p) != (d,):
            raise ValueError(f"{name} must have shape ({d},) to match x.shape[-1]={d}, got {shape_of(p)}")


def check_multi_head(query, key, value, weights, num_heads, mask=None, num_kv_heads=None) -> tuple[int, int]:
    """Check the multi-head inputs; return (d_k, num_kv_heads)."""
    for name, x in (("query", query), ("key", key), ("value", value)):
        if len(x.shape) != 3:
            raise ValueError(f"{name} must be (B, L, D), got shape {shape_of(x)}")
    d_model = int(query.shape[-1])
    if key.shape[-1] != d_model or value.shape[-1] != d_model:
        raise ValueError(
            f"query, key and value must share d_model, got {query.shape[-1]}, {key.shape[-1]}, {value.shape[-1]}"
        )
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(f"key and value must have the same length L_k, got {key.shape[-2]} and {value.shape[-2]}")
    if not query.shape[0] == key.shape[0] == value.shape[0]:
        raise ValueError(
            f"query, key and value must share the batch size B, got {query.shape[0]}, {key.shape[0]}, {value.shape[0]}"
        )
    d_k = check_num_heads(d_model, num_heads)
    groups = num_heads if num_kv_heads is None else num_kv_heads
    if groups < 1 or num_heads % groups != 0:
        raise ValueError(f"num_kv_heads={groups} must be at least 1 and divide num_heads={num_heads}")
    expected = {"w_q": (d_model, d_model), "w_k": (d_model, groups * d_k),
                "w_v": (d_model, groups * d_k), "w_o": (d_model, d_model),
                "b_q": (d_model,), "b_k": (groups * d_k,), "b_v": (groups * d_k,), "b_o": (d_model,)}
    for name, want in expected.items():
        w = weights.get(name)
        if w is None:
            if name.startswith("w_"):
                raise ValueError(f"weights is missing {name!r} of shape {want}")
            continue
        if shape_of(w) != want:
            raise ValueError(f"weights[{name!r}] must have shape {want} for d_model={d_model}, got {shape_of(w)}")
    B, L_q, L_k = int(query.shape[0]), int(query.shape[1]), int(key.shape[1])
    check_mask(mask, (B, num_heads, L_q, L_k))
    return d_k, groups


def check_rotary(x, positions) -> None:
    """x (..., L, d) with d even; positions broadcastable to x.shape[:-1] (one position per row)."""
    if len(x.shape) < 2:
        raise ValueError(f"x must have at least 2 dimensions (..., L, d), got shape {shape_of(x)}")
    d = int(x.shape[-1])
    if d % 2 != 0:
        raise ValueError(f"rotary embedding pairs features (2i, 2i+1), so d must be even, got x.shape[-1]={d}")
    rows = shape_of(x)[:-1]
    if not broadcasts_to(positions, rows):
        raise ValueError(
            f"positions of shape {shape_of(positions)} do not broadcast to x's rows {rows} (..., L): "
            "give one position per row, e.g. shape (L,)"
        )


def check_paged(q, k_cache, v_cache, block_table, seq_lens) -> None:
    """Shapes and indices of a paged cache (the module docstring's); ValueError naming what is wrong."""
    shapes = {n: np.shape(x) for n, x in dict(q=q, k_cache=k_cache, v_cache=v_cache, block_table=block_table,
                                               seq_lens=seq_lens).items()}
    wanted = dict(q=4, k_cache=4, v_cache=4, block_table=2, seq_lens=1)
    for name, ndim in wanted.items():
        if len(shapes[name]) != ndim:
            raise ValueError(f"{name} must have {ndim} dimensions, got shape {shapes[name]}")
    (B, H, _, d_k), (N, H_kv, S, d), (M,) = shapes["q"], shapes["k_cache"], shapes["block_table"][1:]
    if shapes["v_cache"][:3] != (N, H_kv, S) or d != d_k:
        raise ValueError(f"k_cache {shapes['k_cache']} and v_cache {shapes['v_cache']} must be (N, H_kv, S, d) with "
                         f"the same N, H_kv, S, and d_k = {d_k} as q {shapes['q']}")
    if H_kv < 1 or H % H_kv:
        raise ValueError(f"q's {H} heads must be a multiple of the cache's {H_kv} K/V heads")
    if shapes["block_table"][0] != B or shapes["seq_lens"][0] != B:
        raise ValueError(f"block_table {shapes['block_table']} and seq_lens {shapes['seq_lens']} need one row per "
                         f"sequence of q {shapes['q']} (B = {B})")
    for name, x in (("block_table", block_table), ("seq_lens", seq_lens)):
        x = np.asarray(x)
        if x.size and not (np.issubdtype(x.dtype, np.integer) or all(isinstance(v, numbers.Integral) for v in x.flat)):
            raise ValueError(f"{name} must hold integers, got dtype {x.dtype}")
    lens = np.asarray(seq_lens).astype(np.int64)
    if lens.size and (lens.min() < 0 or lens.max() > M * S):
        raise ValueError(f"seq_lens {lens.tolist()} must lie in 0 .. {M * S} (block_table's {M} blocks of {S} slots)")
    table = np.asarray(block_table).astype(np.int64)
    if table.size and (table.min() < 0 or table.max() >= N):
        bad = sorted(set(table[(table < 0) | (table >= N)].tolist()))
        raise ValueError(f"block_table holds blocks {bad}, but the pool (k_cache, v_cache) has blocks 0 .. {N - 1}")
