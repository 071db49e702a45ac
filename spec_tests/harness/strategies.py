"""Hypothesis strategies for the spec's inputs.

Arrays are drawn as (shape, seed) and made with NumPy's generator, so a
shrunk example is small *and* its printout says how to rebuild it. Sizes
include odd values on purpose: lengths 1, 7, 113; head sizes like 13.

One bug, its own claims: a strategy draws what a claim is about and nothing
else. Rows that see no key (MASK-4's subject) appear only when a test asks for
`dead_rows=True`; otherwise every masked query keeps key 0 visible. A causal
case is square (L_q = L_k, where top-left and bottom-right alignment agree)
unless the test asks for `alignment=True` (MASK-3's subject). So a wrong fill
for dead rows or a wrong causal alignment fails the masks chapter's claims,
not every claim that happens to draw a mask.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

LENGTHS = st.one_of(st.integers(1, 9), st.sampled_from([1, 7, 13, 113]))
SHORT_LENGTHS = st.integers(1, 9)
HEAD_DIMS = st.one_of(st.integers(1, 8), st.sampled_from([13, 16]))
BATCH_SHAPES = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)
SEEDS = st.integers(0, 2**32 - 1)


def normal(seed: int, shape, scale: float = 1.0, offset: float = 0.0) -> np.ndarray:
    return offset + scale * np.random.default_rng(seed).standard_normal(shape)


def random_mask(seed: int, shape, density: float, dead_rows: int = 0, alive: bool = False) -> np.ndarray:
    """A boolean mask with about `density` of its entries True, and `dead_rows` rows all False.

    alive: every row keeps key 0 visible (no query sees nothing), unless dead_rows asks for some."""
    rng = np.random.default_rng(seed)
    m = rng.random(shape) < density
    if alive and not dead_rows and len(shape) >= 1 and shape[-1] > 0:
        m[..., 0] = True
    if dead_rows and len(shape) >= 2:
        rows = rng.choice(shape[-2], size=min(dead_rows, shape[-2]), replace=False)
        m[..., rows, :] = False
    return m


@dataclass
class AttentionCase:
    """q (*batch, L_q, d_k), k (*batch, L_k, d_k), v (*batch, L_k, d_v), and how to mask them."""

    batch: tuple
    L_q: int
    L_k: int
    d_k: int
    d_v: int
    seed: int
    mask_shape: tuple | None = None
    density: float = 1.0
    dead_rows: int = 0
    is_causal: bool = False
    magnitude: float = 1.0  # q and k are drawn with this standard deviation
    alive: bool = True  # without dead_rows, every query row keeps a visible key (key 0)
    bias: bool = False  # an additive float bias (L_q, L_k) on the scores, passed as bias= (a later chapter's keyword)
    q: np.ndarray = field(init=False, repr=False)
    k: np.ndarray = field(init=False, repr=False)
    v: np.ndarray = field(init=False, repr=False)
    mask: np.ndarray | None = field(init=False, repr=False)

    def __post_init__(self):
        b = self.batch
        self.q = normal(self.seed, (*b, self.L_q, self.d_k), self.magnitude)
        self.k = normal(self.seed + 1, (*b, self.L_k, self.d_k), self.magnitude)
        self.v = normal(self.seed + 2, (*b, self.L_k, self.d_v))
        self.mask = None
        if self.mask_shape is not None:
            self.mask = random_mask(self.seed + 3, self.mask_shape, self.density, self.dead_rows, self.alive)
        self.bias_values = normal(self.seed + 4, (self.L_q, self.L_k)) if self.bias else None

    @property
    def kwargs(self) -> dict:
        if self.bias:
            return {"mask": self.mask, "is_causal": self.is_causal, "bias": self.bias_values}
        return {"mask": self.mask, "is_causal": self.is_causal}

    @property
    def scores_shape(self) -> tuple:
        return (*self.batch, self.L_q, self.L_k)


def _mask_shapes(batch: tuple, L_q: int, L_k: int):
    full = (*batch, L_q, L_k)
    options = [full, (L_q, L_k), (L_k,), (*(1 for _ in batch), 1, L_k)]
    if batch:
        options.append((*batch, 1, L_k))
    return st.sampled_from(options)


@st.composite
def attention_cases(draw, masked=None, causal=None, lengths=LENGTHS, dims=HEAD_DIMS, batch=BATCH_SHAPES,
                    dead_rows=False, magnitude=1.0, alignment=False, bias=False) -> AttentionCase:
    """An attention problem; masked/causal: True, False or None (either); bias: an additive bias on the scores.

    dead_rows: masks may hide every key of a query (MASK-4's subject); otherwise each row keeps a visible key.
    alignment: a causal case may be non-square (MASK-3's subject); otherwise causal cases have L_q = L_k."""
    b = draw(batch, label="batch")
    L_q, L_k = draw(lengths, label="L_q"), draw(lengths, label="L_k")
    d_k, d_v = draw(dims, label="d_k"), draw(dims, label="d_v")
    seed = draw(SEEDS, label="seed")
    is_causal = draw(st.booleans(), label="is_causal") if causal is None else causal
    if is_causal and not alignment:
        L_k = L_q  # square: the alignment of the causal mask is not what this claim is about
    use_mask = draw(st.booleans(), label="masked") if masked is None else masked
    mask_shape, density, dead = None, 1.0, 0
    if use_mask:
        mask_shape = draw(_mask_shapes(b, L_q, L_k), label="mask_shape")
        density = draw(st.sampled_from([0.3, 0.6, 0.9]), label="density")
        if dead_rows and len(mask_shape) >= 2:
            dead = draw(st.integers(0, 1), label="dead_rows")
    return AttentionCase(b, L_q, L_k, d_k, d_v, seed, mask_shape, density, dead, is_causal, magnitude, bias=bias)


def mha_weights(seed: int, D: int, bias: bool, kv_dim: int | None = None) -> dict:
    """w_q, w_k, w_v, w_o (D x D, or D x kv_dim for K and V) scaled by 1/sqrt(D); biases if asked."""
    kv = D if kv_dim is None else kv_dim
    s = 1.0 / np.sqrt(D)
    w = {"w_q": normal(seed, (D, D), s), "w_k": normal(seed + 1, (D, kv), s),
         "w_v": normal(seed + 2, (D, kv), s), "w_o": normal(seed + 3, (D, D), s)}
    if bias:
        w.update(b_q=normal(seed + 4, (D,), 0.1), b_k=normal(seed + 5, (kv,), 0.1),
                 b_v=normal(seed + 6, (kv,), 0.1), b_o=normal(seed + 7, (D,), 0.1))
    return w


@dataclass
class MHACase:
    """query (B, L_q, D), key and value (B, L_k, D), weights, num_heads, mask, is_causal."""

    B: int
    L_q: int
    L_k: int
    num_heads: int
    d_k: int
    seed: int
    self_attention: bool = True
    bias: bool = True
    mask_kind: str | None = None  # None, "padding", "full", "pair"
    is_causal: bool = False
    alive: bool = True  # every query row keeps a visible key (key 0) under "full" and "pair" masks
    query: np.ndarray = field(init=False, repr=False)
    key: np.ndarray = field(init=False, repr=False)
    value: np.ndarray = field(init=False, repr=False)
    weights: dict = field(init=False, repr=False)
    mask: np.ndarray | None = field(init=False, repr=False)

    @property
    def D(self) -> int:
        return self.num_heads * self.d_k

    def __post_init__(self):
        if self.self_attention:
            self.L_k = self.L_q
        B, D = self.B, self.D
        self.query = normal(self.seed, (B, self.L_q, D))
        if self.self_attention:
            self.key = self.value = self.query
        else:
            self.key = normal(self.seed + 1, (B, self.L_k, D))
            self.value = normal(self.seed + 2, (B, self.L_k, D))
        self.weights = mha_weights(self.seed + 10, D, self.bias)
        rng = np.random.default_rng(self.seed + 3)
        if self.mask_kind == "padding":
            lengths = rng.integers(1, self.L_k + 1, size=B)
            self.mask = (np.arange(self.L_k)[None, :] < lengths[:, None])[:, None, None, :]  # (B, 1, 1, L_k)
        elif self.mask_kind == "full":
            self.mask = rng.random((B, self.num_heads, self.L_q, self.L_k)) < 0.7
        elif self.mask_kind == "pair":
            self.mask = rng.random((self.L_q, self.L_k)) < 0.7
        else:
            self.mask = None
        if self.alive and self.mask_kind in ("full", "pair"):
            self.mask[..., 0] = True

    @property
    def args(self) -> tuple:
        return (self.query, self.key, self.value, self.weights, self.num_heads)

    @property
    def kwargs(self) -> dict:
        return {"mask": self.mask, "is_causal": self.is_causal}


@st.composite
def mha_cases(draw, self_attention=None, masked=False, causal=False, lengths=SHORT_LENGTHS, max_heads=4,
              alignment=False) -> MHACase:
    """A multi-head problem. Masks and causal are off unless asked (masked/causal None: either); every
    query row keeps a visible key, and a causal case is square unless `alignment` (see the module's note)."""
    B = draw(st.integers(1, 3), label="B")
    H = draw(st.integers(1, max_heads), label="num_heads")
    d_k = draw(st.sampled_from([1, 2, 3, 4, 8]), label="d_k")
    L_q, L_k = draw(lengths, label="L_q"), draw(lengths, label="L_k")
    seed = draw(SEEDS, label="seed")
    sa = draw(st.booleans(), label="self_attention") if self_attention is None else self_attention
    bias = draw(st.booleans(), label="bias")
    use_mask = draw(st.booleans(), label="masked") if masked is None else masked
    kind = draw(st.sampled_from(["padding", "full", "pair"]), label="mask_kind") if use_mask else None
    is_causal = draw(st.booleans(), label="is_causal") if causal is None else causal
    if is_causal and not alignment:
        L_k = L_q
    return MHACase(B, L_q, L_k, H, d_k, seed, sa, bias, kind, is_causal)


@dataclass
class LayerNormCase:
    """x (*batch, D) with rows of mean `offset` and spread `spread`; gamma, beta (D,)."""

    batch: tuple
    D: int
    seed: int
    offset: float = 0.0
    spread: float = 1.0
    affine: bool = True
    x: np.ndarray = field(init=False, repr=False)
    gamma: np.ndarray = field(init=False, repr=False)
    beta: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        self.x = normal(self.seed, (*self.batch, self.D), self.spread, self.offset)
        if self.affine:
            self.gamma = normal(self.seed + 1, (self.D,), 0.5, 1.0)
            self.beta = normal(self.seed + 2, (self.D,), 0.5)
        else:
            self.gamma, self.beta = np.ones(self.D), np.zeros(self.D)


@st.composite
def layer_norm_cases(draw, affine=None, dims=st.one_of(st.integers(2, 12), st.sampled_from([13, 64])),
                     offsets=st.sampled_from([0.0, 3.0, -50.0]), spreads=st.sampled_from([1.0, 0.1, 20.0])):
    batch = draw(st.lists(st.integers(1, 4), min_size=0, max_size=2).map(tuple), label="batch")
    D = draw(dims, label="D")
    seed = draw(SEEDS, label="seed")
    aff = draw(st.booleans(), label="affine") if affine is None else affine
    return LayerNormCase(batch, D, seed, draw(offsets, label="offset"), draw(spreads, label="spread"), aff)
