"""The chapters' pictures, drawn from the reference: every number on them is computed by `reference/`.

    python -m docs_gen                 writes them all (with the rest of the generated pages)
    python -m docs_gen.figures [DIR]   only the figures, into DIR (default docs/assets/figures/)

Each figure is an SVG about 5 x 3.5 inches with labelled axes and text of at least 9 pt, so that it
stays readable when the page is 390 px wide. The files are byte-stable: no date in the metadata,
a fixed hash salt for matplotlib's ids, text kept as text (`svg.fonttype: none`), fixed random
generators. Running the generator twice gives identical files (tests/test_figures.py).

FIGURES maps each file name to (chapter, the function that draws it, its alt text); the chapter
pages show them with `![alt](assets/figures/NAME.svg)`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from docs_gen import DOCS

FIGURE_DIR = DOCS / "assets" / "figures"
FONT = 10  # points; tick labels one smaller, never under 9
RC = {
    "svg.hashsalt": "mha-spec",
    "svg.fonttype": "none",
    "font.size": FONT,
    "axes.titlesize": FONT,
    "axes.labelsize": FONT,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "figure.dpi": 100,
}
# Two colours for "may attend" / "hidden", and the head colours (colour-blind safe: Okabe-Ito).
SEEN, HIDDEN = "#0072B2", "#EEEEEE"
HEAD_COLOURS = ["#E69F00", "#56B4E9", "#009E73", "#CC79A7", "#D55E00", "#F0E442"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def drawn_with() -> str:
    """The versions that decide an SVG's bytes (matplotlib writes it, Pillow encodes its heatmaps'
    pixels, NumPy computes): recorded in each file, so that a comparison with a fresh drawing
    knows whether a difference can mean anything."""
    import matplotlib
    import PIL

    return f"drawn with matplotlib {matplotlib.__version__}, Pillow {PIL.__version__}, NumPy {np.__version__}"


def recorded_versions(svg_text: str) -> str | None:
    """The `drawn_with()` line recorded in an SVG written by this module."""
    import re

    m = re.search(r"drawn with matplotlib [^<]*", svg_text)
    return m.group(0).strip() if m else None


def _save(fig, path: Path) -> Path:
    plt = _pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None, "Description": drawn_with()},
                bbox_inches="tight", pad_inches=0.05)
    plt.close(fig)
    return path


def _grid(ax, allowed: np.ndarray, title: str, xlabel: str = "key $j$", ylabel: str = "query $i$",
          values: np.ndarray | None = None) -> None:
    """A boolean (L_q, L_k) grid: blue = may attend, grey = hidden; optional numbers in the cells."""
    from matplotlib.colors import ListedColormap

    L_q, L_k = allowed.shape
    ax.imshow(allowed.astype(float), cmap=ListedColormap([HIDDEN, SEEN]), vmin=0, vmax=1, aspect="equal")
    ax.set_xticks(range(L_k))
    ax.set_yticks(range(L_q))
    ax.set_xticks(np.arange(-0.5, L_k), minor=True)
    ax.set_yticks(np.arange(-0.5, L_q), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    ax.tick_params(which="major", length=0, pad=2)
    for s in ax.spines.values():
        s.set_visible(False)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if values is not None:
        for i in range(L_q):
            for j in range(L_k):
                if allowed[i, j]:
                    ax.text(j, i, f"{values[i, j]:.2f}".lstrip("0"), ha="center", va="center",
                            fontsize=9, color="white")


# ---------------------------------------------------------------------------------------------- SDPA

def sdpa_weights(path: Path) -> Path:
    """The attention weights P = softmax(Q K^T / sqrt(d_k)) of a small example, each row summing to 1."""
    from reference import attention_weights

    plt = _pyplot()
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((4, 8)), rng.standard_normal((6, 8))  # L_q = 4, L_k = 6, d_k = 8
    p = attention_weights(q, k)  # (4, 6)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    im = ax.imshow(p, cmap="Blues", vmin=0, vmax=1, aspect="equal")
    for i in range(p.shape[0]):
        for j in range(p.shape[1]):
            ax.text(j, i, f"{p[i, j]:.2f}", ha="center", va="center", fontsize=9,
                    color="white" if p[i, j] > 0.55 else "black")
    ax.set_xticks(range(6))
    ax.set_yticks(range(4), [f"{i}  (sum {p[i].sum():.0f})" for i in range(4)])
    ax.set_xlabel("key $j$")
    ax.set_ylabel("query $i$")
    ax.set_title("attention weights $P$, $L_q=4$, $L_k=6$, $d_k=8$")
    fig.colorbar(im, ax=ax, fraction=0.035, pad=0.03, label="weight $P_{ij}$")
    return _save(fig, path)


# --------------------------------------------------------------------------------------------- masks

def masks_alignment(path: Path) -> Path:
    """Causal masks for L_q = 3 queries and L_k = 6 keys: PyTorch's top-left corner against the contract's bottom-right."""
    from reference import causal_mask

    plt = _pyplot()
    L_q, L_k = 3, 6
    bottom_right = causal_mask(L_q, L_k)  # j <= i + L_k - L_q
    top_left = np.tril(np.ones((L_q, L_k), dtype=bool))  # j <= i, torch's is_causal for L_q != L_k
    fig, axes = plt.subplots(2, 1, figsize=(5, 3.8))
    _grid(axes[0], top_left, "top-left: $j \\leq i$ (PyTorch's is_causal)", xlabel="")
    _grid(axes[1], bottom_right, "bottom-right: $j \\leq i + L_k - L_q$ (the contract)")
    fig.tight_layout(h_pad=1.0)
    return _save(fig, path)


def masks_kinds(path: Path) -> Path:
    """Padding, causal, their AND, and a query that sees no key (whose weights are all 0)."""
    from reference import causal_mask, masked_softmax, padding_mask

    plt = _pyplot()
    L, n = 5, 3  # one sequence of 3 real tokens padded to 5
    pad = np.broadcast_to(padding_mask([n], L)[0, 0], (L, L))  # (1, 1, 1, L) -> (L, L)
    causal = causal_mask(L, L)
    both = pad & causal
    # a dead row: bottom-right causal with more queries than keys (L_q = 5, L_k = 3)
    dead = causal_mask(5, 3)
    weights = masked_softmax(np.zeros((5, 3)), dead)  # equal scores: uniform over what is visible
    fig, axes = plt.subplots(2, 2, figsize=(5, 5.2))
    _grid(axes[0, 0], pad, f"padding, $n = {n}$ of $L = {L}$", xlabel="")
    _grid(axes[0, 1], causal, "causal", xlabel="", ylabel="")
    _grid(axes[1, 0], both, "padding AND causal")
    _grid(axes[1, 1], dead, "$L_q=5$, $L_k=3$: rows 0, 1\nsee nothing, weights 0", ylabel="", values=weights)
    for i in range(5):
        if not dead[i].any():
            axes[1, 1].text(1, i, "0  0  0", ha="center", va="center", fontsize=9, color="#B00020")
    fig.tight_layout(h_pad=1.2, w_pad=1.0)
    return _save(fig, path)


def kv_cache_growth(path: Path) -> Path:
    """The K/V cache during decoding: a prefill of 3 tokens, then one token per step, run by reference.decode's steps."""
    from matplotlib.colors import ListedColormap

    from reference import KVCache, attend_with_cache

    plt = _pyplot()
    rng = np.random.default_rng(0)
    B, L, D, H, prefill = 1, 8, 4, 2, 3
    w = {name: rng.standard_normal((D, D)) / 2 for name in ("w_q", "w_k", "w_v", "w_o")}
    x = rng.standard_normal((B, L, D))
    cache, sizes, chunks = KVCache(), [], [(0, prefill)] + [(t, t + 1) for t in range(prefill, L)]
    for a, b in chunks:  # the loop of reference.kv_cache.decode, recording the cache after each call
        attend_with_cache(x[:, a:b], w, H, cache)
        sizes.append((a, b, len(cache)))
    grid = np.zeros((len(sizes), L))
    for row, (a, b, T) in enumerate(sizes):
        grid[row, :a] = 1  # already cached: read, not recomputed
        grid[row, a:b] = 2  # appended by this call
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.imshow(grid, cmap=ListedColormap([HIDDEN, "#9EC9E2", "#D55E00"]), vmin=0, vmax=2, aspect="equal")
    ax.set_xticks(range(L))
    ax.set_yticks(range(len(sizes)), ["prefill" if a == 0 else f"step {a}" for a, _, _ in sizes])
    ax.set_xticks(np.arange(-0.5, L), minor=True)
    ax.set_yticks(np.arange(-0.5, len(sizes)), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="both", length=0)
    for s in ax.spines.values():
        s.set_visible(False)
    for row, (a, b, T) in enumerate(sizes):
        ax.text(L - 0.3, row, f"  T = {T}", ha="left", va="center", fontsize=9)
    ax.set_xlabel("position of the cached key/value")
    ax.set_title("cache after each call: orange = appended now,\nblue = kept from earlier calls")
    return _save(fig, path)


# ---------------------------------------------------------------------------------------- multi-head

def heads_split_merge(path: Path) -> Path:
    """split_heads and merge_heads on a (L, D) = (3, 8) array whose entries are their own feature index."""
    from matplotlib.colors import ListedColormap

    from reference import merge_heads, split_heads

    plt = _pyplot()
    L, D, H = 3, 8, 4
    d_k = D // H
    x = np.tile(np.arange(D, dtype=float), (1, L, 1))  # (1, L, D): entry = feature index
    heads = split_heads(x, H)[0]  # (H, L, d_k)
    merged = merge_heads(heads[None])[0]  # (L, D)
    cmap = ListedColormap(HEAD_COLOURS[:H])
    fig = plt.figure(figsize=(5, 3.8))

    def panel(rect, data, title):
        ax = fig.add_axes(rect)
        ax.imshow(data // d_k, cmap=cmap, vmin=0, vmax=H - 1, aspect="equal")
        for (i, j), f in np.ndenumerate(data):
            ax.text(j, i, f"{int(f)}", ha="center", va="center", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(title, fontsize=9, pad=3)
        return ax

    # rows: X (L, D) on top, the H heads (L, d_k) in the middle, the merged (L, H d_k) below
    panel([0.25, 0.74, 0.5, 0.2], x[0], "$X$: $(L, D) = (3, 8)$, entry = feature index")
    for h in range(H):
        panel([0.08 + 0.22 * h, 0.37, 0.16, 0.2], heads[h], f"$h={h}$")
    panel([0.25, 0.0, 0.5, 0.2], merged, "merge_heads: $(L, H d_k) = (3, 8)$")
    fig.text(0.5, 0.665, "split_heads $\\downarrow$  $(H, L, d_k) = (4, 3, 2)$", ha="center", va="center",
             fontsize=9)
    fig.text(0.5, 0.295, "attention per head, then concatenate along features $\\downarrow$", ha="center",
             va="center", fontsize=9)
    return _save(fig, path)


# ---------------------------------------------------------------------------------------- layer norm

def norm_axes(path: Path) -> Path:
    """Which axis each norm averages over: LayerNorm's rows (one sample's features), BatchNorm's columns."""
    from matplotlib.patches import Rectangle

    from reference import BatchNorm, layer_norm

    plt = _pyplot()
    rng = np.random.default_rng(1)
    N, D = 4, 4
    x = rng.normal(2.0, 1.5, size=(N, D)) + np.arange(N)[:, None]  # samples at different levels
    ln = layer_norm(x, np.ones(D), np.zeros(D))
    bn = BatchNorm(D)(x)
    fig, axes = plt.subplots(1, 2, figsize=(5.2, 3.0))
    for ax, y, title, rect in (
        (axes[0], ln, "LayerNorm: each row\n(sample) mean 0, var 1", Rectangle((-0.5, 0.5), D, 1)),
        (axes[1], bn, "BatchNorm: each column\n(feature) mean 0, var 1", Rectangle((0.5, -0.5), 1, N)),
    ):
        ax.imshow(y, cmap="RdBu_r", vmin=-2.2, vmax=2.2, aspect="equal")
        for (i, j), v in np.ndenumerate(y):
            ax.text(j, i, f"{v:.1f}".replace("-0.0", "0.0"), ha="center", va="center", fontsize=9)
        rect.set(fill=False, edgecolor="black", linewidth=2.5)
        ax.add_patch(rect)
        ax.set_xticks(range(D))
        ax.set_yticks(range(N))
        ax.tick_params(length=0)
        ax.set_xlabel("feature")
        ax.set_title(title)
    axes[0].set_ylabel("sample in the batch")
    fig.tight_layout(w_pad=1.5)
    return _save(fig, path)


# ---------------------------------------------------------------------------------------- positional

def sinusoidal_heatmap(path: Path) -> Path:
    from reference import sinusoidal_positional_encoding

    plt = _pyplot()
    L, D = 64, 64
    pe = sinusoidal_positional_encoding(L, D)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    im = ax.imshow(pe, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_xlabel("feature $k$ (even: sin, odd: cos)")
    ax.set_ylabel("position $p$")
    ax.set_title(f"sinusoidal encoding, $L = {L}$, $D = {D}$")
    fig.colorbar(im, ax=ax, fraction=0.04, pad=0.03, label="$PE[p, k]$")
    return _save(fig, path)


def sinusoidal_curves(path: Path) -> Path:
    from reference import sinusoidal_positional_encoding

    plt = _pyplot()
    L, D = 100, 64
    pe = sinusoidal_positional_encoding(L, D)
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for k, c in zip((6, 10, 16, 24), HEAD_COLOURS):
        omega = 10000.0 ** (-k / D)  # column k = 2i turns at omega_i = 10000^(-2i/D)
        ax.plot(np.arange(L), pe[:, k], color=c, label=f"$k={k}$: period {2 * np.pi / omega:.0f}")
    ax.set_xlabel("position $p$")
    ax.set_ylabel("$PE[p, k] = \\sin(p\\,\\omega)$")
    ax.set_title("even columns: slower waves for larger $k$")
    ax.set_ylim(-1.15, 1.95)
    ax.legend(loc="upper center", ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def rope_rotation(path: Path) -> Path:
    """RoPE turns each feature pair by m θ_i: pairs 0 and 1 of one vector at positions m = 0..7 (d = 8)."""
    from reference import rotary_embedding

    plt = _pyplot()
    d, positions = 8, np.arange(8)
    x = np.tile(np.array([1.0, 0.0] * (d // 2)), (len(positions), 1))  # every pair starts at (1, 0)
    r = rotary_embedding(x, positions)  # (8, d)
    fig, axes = plt.subplots(1, 2, figsize=(5.2, 3.0))
    circle = np.linspace(0, 2 * np.pi, 200)
    for ax, i in zip(axes, (0, 1)):
        theta = 10000.0 ** (-2 * i / d)
        ax.plot(np.cos(circle), np.sin(circle), color="#BBBBBB", linewidth=1)
        for m in positions:
            px, py = r[m, 2 * i], r[m, 2 * i + 1]
            ax.annotate("", xy=(px, py), xytext=(0, 0),
                        arrowprops=dict(arrowstyle="->", color=SEEN, alpha=0.35 + 0.08 * m))
            if i == 0 or m in (0, 7):
                ax.text(1.22 * px, 1.22 * py, f"{m}", ha="center", va="center", fontsize=9)
        ax.set_aspect("equal")
        ax.set_xlim(-1.45, 1.45)
        ax.set_ylim(-1.45, 1.45)
        ax.set_xticks([-1, 0, 1])
        ax.set_yticks([-1, 0, 1])
        ax.set_xlabel(f"$x_{{{2 * i}}}$")
        ax.set_ylabel(f"$x_{{{2 * i + 1}}}$")
        ax.set_title(f"pair $i={i}$: $\\theta_{i} = {theta:.3g}$ rad")
    fig.tight_layout(w_pad=2)
    return _save(fig, path)


# ----------------------------------------------------------------------------------------- efficient

def online_softmax_tiles(path: Path) -> Path:
    """Blocks of the (L_q, L_k) score matrix a chunked kernel visits: all of them, or under causal only those with a visible key."""
    from matplotlib.patches import Rectangle

    from reference import causal_mask

    plt = _pyplot()
    L, b = 12, 3
    n = L // b
    fig, axes = plt.subplots(1, 2, figsize=(5.2, 3.2))
    for ax, causal, title in ((axes[0], False, "no mask: every block"), (axes[1], True, "causal: skip empty blocks")):
        allowed = causal_mask(L, L) if causal else np.ones((L, L), dtype=bool)
        ax.imshow(allowed.astype(float), cmap="Blues", vmin=0, vmax=2.2, aspect="equal")
        counts = {"full": 0, "partial": 0, "skipped": 0}
        for bi in range(n):
            for bj in range(n):
                blk = allowed[bi * b:(bi + 1) * b, bj * b:(bj + 1) * b]
                kind = "full" if blk.all() else "partial" if blk.any() else "skipped"
                counts[kind] += 1
                style = {"full": dict(edgecolor="black", hatch=None, facecolor="none"),
                         "partial": dict(edgecolor="black", hatch="//", facecolor="none"),
                         "skipped": dict(edgecolor="#999999", hatch=None, facecolor="white")}[kind]
                ax.add_patch(Rectangle((bj * b - 0.5, bi * b - 0.5), b, b, linewidth=1.2, **style))
                if kind == "skipped":
                    ax.text(bj * b + 1, bi * b + 1, "x", ha="center", va="center", fontsize=10, color="#999999")
        ax.set_xticks(np.arange(0, L, b))
        ax.set_yticks(np.arange(0, L, b))
        ax.set_xlabel("key $j$ (blocks of $b_k = 3$)")
        ax.set_title(f"{title}\n{counts['full']} full, {counts['partial']} masked, {counts['skipped']} skipped",
                     fontsize=9)
    axes[0].set_ylabel("query $i$ (blocks of $b_q = 3$)")
    fig.text(0.5, -0.03, "hatched: computed, then masked inside the block; x: never computed",
             ha="center", fontsize=9)
    fig.tight_layout(w_pad=1.5)
    return _save(fig, path)


# ----------------------------------------------------------------------------------- variable length

def padded_batch(path: Path) -> Path:
    """Three sequences of lengths 5, 3, 7 padded to L = 7: the key-padding mask padding_mask(lengths, 7)."""
    from reference import padding_mask

    plt = _pyplot()
    lengths, L = [5, 3, 7], 7
    keep = padding_mask(lengths, L)[:, 0, 0, :]  # (B, L)
    seq = np.broadcast_to(keep[1], (L, L))  # sequence 1's mask, broadcast over its queries
    fig, axes = plt.subplots(1, 2, figsize=(5.2, 2.9))
    _grid(axes[0], keep, "the batch $(B, L) = (3, 7)$,\ngrey = pad", xlabel="position $j$", ylabel="")
    axes[0].set_yticks(range(len(lengths)), [f"{b}: $n_{b}={n}$" for b, n in enumerate(lengths)])
    _grid(axes[1], seq, "sequence 1, broadcast\nover its queries", ylabel="query $i$")
    fig.tight_layout(w_pad=1.5)
    return _save(fig, path)


# ----------------------------------------------------------------------------------------- precision

def precision_error(path: Path) -> Path:
    """The reference SDPA's error against float64 when it computes in float32 and in emulated float16 / bfloat16."""
    from reference import scaled_dot_product_attention
    from spec_tests.harness.arrays import EPS, in_numpy_dtype

    plt = _pyplot()
    rng = np.random.default_rng(0)
    L, d = 64, 64
    q, k, v = (rng.standard_normal((L, d)) for _ in range(3))
    spreads = np.array([0.5, 1, 2, 4, 8, 16, 32])  # multiplies q: the scores' standard deviation
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for dtype, c, mark in (("float32", HEAD_COLOURS[2], "o"), ("float16", HEAD_COLOURS[0], "s"),
                           ("bfloat16", HEAD_COLOURS[4], "^")):
        errs = []
        for s in spreads:
            exact = scaled_dot_product_attention(q * s, k, v)
            low = [in_numpy_dtype(t, dtype) for t in (q * s, k, v)]
            seen = np.asarray(scaled_dot_product_attention(*low), dtype=np.float64)
            err = np.abs(seen - exact).max()
            errs.append(float(f"{err:.2g}"))  # the plot is log-scale: two digits are all it shows
        ax.plot(spreads, errs, marker=mark, color=c, label=dtype)
        ax.axhline(EPS[dtype], color=c, linestyle=":", linewidth=1)
        ax.text(spreads[-1], EPS[dtype] * 0.8, f"$\\epsilon$ of {dtype}", color=c, ha="right", va="top", fontsize=9)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("standard deviation of the scaled scores")
    ax.set_ylabel("max |out - float64 out|")
    ax.set_title(f"the reference in each dtype, $L = {L}$, $d = {d}$")
    ax.legend(loc="center left", bbox_to_anchor=(0.0, 0.4), frameon=False)
    ax.grid(alpha=0.3, which="major")
    return _save(fig, path)


# -------------------------------------------------------------------------------------------- errors

def errors_shapes(path: Path) -> Path:
    """The shapes attention checks, drawn to scale: the sizes that must agree share a colour."""
    from matplotlib.patches import Rectangle

    from reference import attention_weights, scaled_dot_product_attention

    plt = _pyplot()
    L_q, L_k, d_k, d_v = 3, 5, 4, 2
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((L_q, d_k)), rng.standard_normal((L_k, d_k)), rng.standard_normal((L_k, d_v))
    shapes = {"$Q$": q.shape, "$K$": k.shape, "$V$": v.shape,
              "$P$": attention_weights(q, k).shape, "out": scaled_dot_product_attention(q, k, v).shape}
    colour = {L_q: "#0072B2", L_k: "#D55E00", d_k: "#009E73", d_v: "#CC79A7"}
    name = {L_q: "L_q", L_k: "L_k", d_k: "d_k", d_v: "d_v"}
    fig, ax = plt.subplots(figsize=(5.2, 2.6))
    x0 = 0.0
    for label, (rows, cols) in shapes.items():
        ax.add_patch(Rectangle((x0, 0), cols, rows, facecolor="#F4F4F4", edgecolor="black"))
        ax.text(x0 + cols / 2, rows + 0.35, label, ha="center", va="bottom", fontsize=11)
        ax.plot([x0 - 0.25] * 2, [0, rows], color=colour[rows], linewidth=4)  # rows, on the left
        ax.text(x0 - 0.35, rows / 2, f"${name[rows]}$", color=colour[rows], ha="right", va="center",
                fontsize=11, rotation=90)
        ax.plot([x0, x0 + cols], [-0.3] * 2, color=colour[cols], linewidth=4)  # columns, below
        ax.text(x0 + cols / 2, -0.55, f"${name[cols]}$", color=colour[cols], ha="center", va="top", fontsize=11)
        x0 += cols + 1.6
    ax.set_xlim(-1.2, x0 - 1.0)
    ax.set_ylim(-1.6, L_k + 1.2)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("sizes in one colour must agree, or ValueError", fontsize=9)
    return _save(fig, path)


# ----------------------------------------------------------------------------------------- gradients

def gradients_causal(path: Path) -> Path:
    """How much output row i depends on key/value row j: the norm of (dK_j, dV_j) for dout = e_i, causal, one dead row."""
    from reference import scaled_dot_product_attention_backward

    plt = _pyplot()
    rng = np.random.default_rng(0)
    L, d = 6, 4
    q, k, v = (rng.standard_normal((L, d)) for _ in range(3))
    mask = np.ones((L, L), dtype=bool)
    mask[2] = False  # query 2 sees no key
    sens = np.zeros((L, L))
    for i in range(L):
        dout = np.zeros((L, d))
        dout[i] = 1.0  # the gradient of sum(out[i])
        _, dk, dv = scaled_dot_product_attention_backward(dout, q, k, v, mask=mask, is_causal=True)
        sens[i] = np.sqrt((dk ** 2).sum(-1) + (dv ** 2).sum(-1))
    fig, ax = plt.subplots(figsize=(5, 3.6))
    im = ax.imshow(sens, cmap="Purples", aspect="equal")
    for (i, j), s in np.ndenumerate(sens):
        ax.text(j, i, "0" if s == 0 else f"{s:.2f}", ha="center", va="center", fontsize=9,
                color="white" if s > 0.6 * sens.max() else "black")
    ax.set_xticks(range(L))
    ax.set_yticks(range(L), [f"{i} (no key)" if i == 2 else str(i) for i in range(L)])
    ax.set_xlabel("key/value row $j$")
    ax.set_ylabel("output row $i$")
    ax.set_title("size of the gradient of output row $i$\nwith respect to $k_j, v_j$ (causal)")
    fig.colorbar(im, ax=ax, fraction=0.04, pad=0.03)
    return _save(fig, path)


# ------------------------------------------------------------------------------------------- residual

def residual_blocks(path: Path) -> Path:
    """Post-LN and Pre-LN blocks as the reference writes them (reference/residual.py)."""
    from matplotlib.patches import FancyBboxPatch

    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(5.2, 3.6))

    def box(ax, y, text, colour):
        ax.add_patch(FancyBboxPatch((0.2, y - 0.28), 1.6, 0.56, boxstyle="round,pad=0.05",
                                    facecolor=colour, edgecolor="black"))
        ax.text(1.0, y, text, ha="center", va="center", fontsize=9)

    def arrow(ax, a, b, colour="black"):
        ax.annotate("", xy=b, xytext=a, arrowprops=dict(arrowstyle="->", color=colour, linewidth=1.5))

    for ax, pre in zip(axes, (False, True)):
        ax.set_xlim(-0.6, 2.4)
        ax.set_ylim(-0.4, 5.5)
        ax.axis("off")
        ax.text(1.0, -0.25, "$x$", ha="center", va="center")
        if pre:
            box(ax, 1.5, "LayerNorm", "#FFE8B0")
            box(ax, 2.7, "sublayer", "#CFE3F2")
            ax.text(1.0, 3.9, "$\\oplus$", ha="center", va="center", fontsize=16)
            arrow(ax, (1.0, 0.0), (1.0, 1.17))
            arrow(ax, (1.0, 1.83), (1.0, 2.37))
            arrow(ax, (1.0, 3.03), (1.0, 3.75))
            arrow(ax, (1.0, 4.05), (1.0, 4.8))
            ax.plot([1.0, -0.35, -0.35], [0.45, 0.45, 3.9], color="#D55E00", linewidth=2)
            arrow(ax, (-0.35, 3.9), (0.86, 3.9), "#D55E00")
            ax.text(1.0, 5.05, "$x + \\mathrm{sublayer}(\\mathrm{LN}(x))$", ha="center", fontsize=9)
            ax.set_title("Pre-LN: identity path\nfrom output to input")
        else:
            box(ax, 1.5, "sublayer", "#CFE3F2")
            ax.text(1.0, 2.7, "$\\oplus$", ha="center", va="center", fontsize=16)
            box(ax, 3.9, "LayerNorm", "#FFE8B0")
            arrow(ax, (1.0, 0.0), (1.0, 1.17))
            arrow(ax, (1.0, 1.83), (1.0, 2.55))
            arrow(ax, (1.0, 2.85), (1.0, 3.57))
            arrow(ax, (1.0, 4.23), (1.0, 4.8))
            ax.plot([1.0, -0.35, -0.35], [0.45, 0.45, 2.7], color="#D55E00", linewidth=2)
            arrow(ax, (-0.35, 2.7), (0.86, 2.7), "#D55E00")
            ax.text(1.0, 5.05, "$\\mathrm{LN}(x + \\mathrm{sublayer}(x))$", ha="center", fontsize=9)
            ax.set_title("Post-LN: a LayerNorm on\nthe residual path")
    fig.text(0.5, 0.06, "orange: the residual (skip) connection", ha="center", fontsize=9, color="#D55E00")
    return _save(fig, path)


# Figures whose numbers depend on the CPU (float32 exp() and summation order differ between
# machines by an ulp or two): drawing them twice on one machine gives the same bytes, but the
# committed copy is not compared with a drawing made elsewhere.
MACHINE_DEPENDENT = {"precision_error"}

# name -> (chapter, function, alt text)
FIGURES = {
    "sdpa_weights": ("sdpa", sdpa_weights,
                     "Heatmap of the attention weights of 4 queries over 6 keys; each row sums to 1"),
    "masks_alignment": ("masks", masks_alignment,
                        "Causal masks for 3 queries and 6 keys: top-left alignment against bottom-right"),
    "masks_kinds": ("masks", masks_kinds,
                    "Four mask grids: padding, causal, their AND, and a mask whose first two rows see no key"),
    "kv_cache": ("masks", kv_cache_growth,
                 "The key/value cache after a prefill of 3 tokens and after each decoding step"),
    "heads_split_merge": ("multi_head", heads_split_merge,
                          "A 3 by 8 array split into 4 heads of 3 by 2 and merged back, coloured by head"),
    "norm_axes": ("layer_norm", norm_axes,
                  "LayerNorm normalises each row (sample); BatchNorm normalises each column (feature)"),
    "sinusoidal_heatmap": ("positional", sinusoidal_heatmap,
                           "Heatmap of the sinusoidal encoding: position against feature"),
    "sinusoidal_curves": ("positional", sinusoidal_curves,
                          "Four even columns of the sinusoidal encoding against position: slower waves for larger k"),
    "rope_rotation": ("positional", rope_rotation,
                      "RoPE rotates each feature pair by m times theta_i: two pairs at positions 0 to 7"),
    "online_softmax_tiles": ("efficient", online_softmax_tiles,
                             "Blocks of a 12 by 12 score matrix visited by chunked attention, without and with causal"),
    "padded_batch": ("variable_length", padded_batch,
                     "Three sequences of lengths 5, 3 and 7 padded to 7, and the key-padding mask of one of them"),
    "precision_error": ("precision", precision_error,
                        "Maximum error of the reference attention in float32, float16 and bfloat16 against "
                        "float64, as the scores grow"),
    "errors_shapes": ("errors", errors_shapes,
                      "The shapes of Q, K, V, P and the output; sizes that must agree share a colour"),
    "gradients_causal": ("gradients", gradients_causal,
                         "Gradient of each output row with respect to each key/value row under a causal mask: "
                         "zero above the diagonal and zero for the query that sees no key"),
    "residual_blocks": ("residual", residual_blocks, "Post-LN and Pre-LN residual blocks side by side"),
}


# ------------------------------------------------------------------------------ MASK ALGEBRA
# (the mask algebra chapter's figures: windows, packed documents, prefix-LM, their AND)

def mask_algebra_grids(path: Path) -> Path:
    """Six masks built by reference.mask_algebra on L = 6 positions: windows, documents, prefix-LM and an AND."""
    from reference import causal_mask
    from reference.mask_algebra import document_mask, prefix_lm_mask, segment_ids_from_lengths, window_mask

    plt = _pyplot()
    L = 6
    seg = segment_ids_from_lengths([2, 3, 1])  # three packed documents
    docs = document_mask(seg, seg)
    panels = [
        (window_mask(L, L, (2, 0)), "window (2, 0):\ncausal, 2 back"),
        (window_mask(L, L, (1, 1)), "window (1, 1):\na band"),
        (window_mask(3, L, (2, 0)), "window (2, 0),\n$L_q=3$, $L_k=6$"),
        (docs & causal_mask(L, L), "documents 2, 3, 1\nAND causal"),
        (prefix_lm_mask(L, 3), "prefix-LM, prefix 3:\nprefix OR causal"),
        (docs & window_mask(L, L, (1, 0)), "documents AND\nwindow (1, 0)"),
    ]
    fig, axes = plt.subplots(2, 3, figsize=(6.4, 5.4))
    for n, (ax, (allowed, title)) in enumerate(zip(axes.flat, panels)):
        _grid(ax, allowed, title, xlabel="key $j$" if n >= 3 else "", ylabel="query $i$" if n % 3 == 0 else "")
    fig.tight_layout(h_pad=1.0, w_pad=0.6)
    return _save(fig, path)


FIGURES["mask_algebra_grids"] = (
    "mask_algebra", mask_algebra_grids,
    "Six mask grids: a causal window, a band, a window aligned bottom-right for 3 queries and 6 keys, "
    "packed documents with causal, prefix-LM, and documents AND a window")


# ------------------------------------------------------------------------ SOFTCAP AND SINKS
# (the softcapping and sinks chapter's figures: the cap's curve, the sink's share of the weight)

def softcap_curve(path: Path) -> Path:
    """cap · tanh(s / cap) against s for three caps, beside the identity: small scores pass, large ones flatten."""
    from reference.softcap import softcap

    plt = _pyplot()
    s = np.linspace(-12, 12, 241)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(s, s, color="#888888", linestyle="--", label="no cap")
    for cap, colour in ((2.0, "#B00020"), (5.0, SEEN), (10.0, "#2E7D32")):
        ax.plot(s, softcap(s, cap), color=colour, label=f"cap = {cap:g}")
    ax.set_ylim(-12, 12)
    ax.set_xlabel("scaled score $s$")
    ax.set_ylabel("capped score")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def sink_share(path: Path) -> Path:
    """One row of 5 keys: its weights without a sink, and with sinks of 0 and 2 (the sink's share drawn hatched)."""
    from reference.sinks import softmax_with_sink

    plt = _pyplot()
    scores = np.array([[1.0, 0.2, -0.5, 0.8, 0.0]])  # one query, 5 keys
    allowed = np.ones_like(scores, dtype=bool)
    rows = [("no sink", softmax_with_sink(scores, allowed, np.array(-np.inf))[0]),
            ("sink $\\sigma = 0$", softmax_with_sink(scores, allowed, np.array(0.0))[0]),
            ("sink $\\sigma = 2$", softmax_with_sink(scores, allowed, np.array(2.0))[0])]
    colours = ["#1565C0", "#42A5F5", "#90CAF9", "#0D47A1", "#64B5F6"]
    fig, ax = plt.subplots(figsize=(5, 3.0))
    for y, (label, p) in enumerate(rows):
        left = 0.0
        for j, w in enumerate(p):
            ax.barh(y, w, left=left, color=colours[j], edgecolor="white")
            if w > 0.06:
                ax.text(left + w / 2, y, f"{w:.2f}", ha="center", va="center", fontsize=9, color="white")
            left += w
        share = 1.0 - p.sum()
        if share > 1e-9:
            ax.barh(y, share, left=left, color="white", edgecolor="#B00020", hatch="//")
            ax.text(left + share / 2, y, f"sink\n{share:.2f}", ha="center", va="center", fontsize=9, color="#B00020")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("weight of each key (row sum = 1 - the sink's share)")
    fig.tight_layout()
    return _save(fig, path)


FIGURES["softcap_curve"] = (
    "softcap_sinks", softcap_curve,
    "The capped score cap times tanh of s over cap against the score s, for caps 2, 5 and 10, beside the identity")
FIGURES["sink_share"] = (
    "softcap_sinks", sink_share,
    "One row of five weights without a sink and with sinks of 0 and 2: the sink takes a share and the row sums "
    "to less than 1")


# ------------------------------------------------------------------------------ LOG-SUM-EXP
# (the log-sum-exp chapter's figure: two partial results merged by their log-sum-exp)

def lse_merge(path: Path) -> Path:
    """One query's weights over 8 keys: each half's own softmax, and the whole, which is each half times exp(lse_k - lse)."""
    from reference import scaled_dot_product_attention

    plt = _pyplot()
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((1, 4)) * 1.5, rng.standard_normal((8, 4))
    eye = np.eye(8)  # V = I: the output is the weights themselves
    first = np.arange(8) < 4
    p1, lse1 = scaled_dot_product_attention(q, k, eye, mask=first, return_lse=True)
    p2, lse2 = scaled_dot_product_attention(q, k, eye, mask=~first, return_lse=True)
    whole, lse = scaled_dot_product_attention(q, k, eye, return_lse=True)
    w1, w2 = float(np.exp(lse1 - lse)[0]), float(np.exp(lse2 - lse)[0])
    fig, axes = plt.subplots(1, 2, figsize=(6.4, 3.2), sharey=True)
    x = np.arange(8)
    axes[0].bar(x[first], p1[0, first], color=SEEN, label="keys 0-3 alone")
    axes[0].bar(x[~first], p2[0, ~first], color="#E69F00", label="keys 4-7 alone")
    axes[0].set_title("each half's own softmax\n(each sums to 1)")
    axes[0].set_ylabel("weight")
    axes[1].bar(x[first], w1 * p1[0, first], color=SEEN, label=f"x exp(lse1 - lse) = {w1:.2f}")
    axes[1].bar(x[~first], w2 * p2[0, ~first], color="#E69F00", label=f"x exp(lse2 - lse) = {w2:.2f}")
    axes[1].scatter(x, whole[0], color="black", zorder=3, s=14, label="the whole, one softmax")
    axes[1].set_title("merged: each half weighted\nby its share of the denominator")
    for ax in axes:
        ax.set_xticks(x)
        ax.set_xlabel("key $j$")
        ax.legend(loc="upper left", fontsize=9)
    axes[0].set_ylim(0, 1.25)
    fig.tight_layout(w_pad=0.8)
    return _save(fig, path)


FIGURES["lse_merge"] = (
    "log_sum_exp", lse_merge,
    "One query's weights over 8 keys: each half's own softmax, and the merge, each half scaled by exp of its "
    "log-sum-exp minus the whole's, which lands on the weights of one softmax over all keys")


# ------------------------------------------------------------------------ PAGED KV CACHE
# (the efficient-attention chapter's paged cache: a block table and the pool it points into)

def paged_block_table(path: Path) -> Path:
    """Two sequences of 5 and 3 tokens in a pool of 6 blocks of 2 slots (reference.paged_cache.to_paged, shuffled):
    the block table on the left, the pool on the right, each slot labelled with the token it holds (· noise)."""
    from matplotlib.colors import ListedColormap

    from reference.paged_cache import to_paged

    plt = _pyplot()
    lens, S = [5, 3], 2
    k = np.zeros((2, 1, 5, 1))
    _, _, table = to_paged(k, k, lens, S, rng=np.random.default_rng(3))
    N = sum(-(-n // S) for n in lens) + 2  # to_paged's pool: the blocks handed out and two spare ones
    owner = np.full((N, S), -1)  # (N, S): which sequence's token a slot holds, -1 for none
    token = np.full((N, S), -1)
    for b, n in enumerate(lens):
        for t in range(n):
            owner[table[b, t // S], t % S], token[table[b, t // S], t % S] = b, t
    colours = ListedColormap([HIDDEN, SEEN, "#e6862e"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(6.4, 3.4), gridspec_kw={"width_ratios": [3, 2.2]})
    used = np.array([[m < -(-n // S) for m in range(table.shape[1])] for n in lens])
    left.imshow(np.where(used, np.arange(2)[:, None] + 1, 0), cmap=colours, vmin=0, vmax=2)
    for b in range(2):
        for m in range(table.shape[1]):
            left.text(m, b, str(table[b, m]) if used[b, m] else "·", ha="center", va="center", color="white")
    left.set_xticks(range(table.shape[1]))
    left.set_yticks(range(2), [f"seq {b}\nseq_len {n}" for b, n in enumerate(lens)])
    left.set_xlabel("table entry $n$ (tokens $2n$, $2n+1$)")
    left.set_title("block_table (B, M)")
    right.imshow(owner + 1, cmap=colours, vmin=0, vmax=2)
    for p in range(N):
        for s_ in range(S):
            right.text(s_, p, f"t{token[p, s_]}" if token[p, s_] >= 0 else "·", ha="center", va="center",
                       color="white", fontsize=9)
    right.set_xticks(range(S))
    right.set_yticks(range(N))
    right.set_xlabel("slot (t mod S)")
    right.set_ylabel("pool block")
    right.set_title("k_cache (N, H_kv, S, d)")
    for ax in (left, right):
        for sp in ax.spines.values():
            sp.set_visible(False)
        ax.tick_params(length=0)
    fig.tight_layout(w_pad=1.5)
    return _save(fig, path)


FIGURES["paged_block_table"] = (
    "efficient", paged_block_table,
    "A paged KV cache: the block table of two sequences of 5 and 3 tokens, and the pool of 7 blocks of 2 slots "
    "it points into, each slot labelled with its token; the other slots hold noise")



# ------------------------------------------------------------------------------------ POISON, DROPOUT
# (the masks chapter's poison figure; the dropout chapter's figure of two heads' patterns)

def hidden_poison(path: Path) -> Path:
    """A padding mask with NaN at the hidden key, and the outputs: P V alone (0 * NaN) against V zeroed first."""
    from reference import attention_weights, scaled_dot_product_attention

    plt = _pyplot()
    L_q, L_k = 4, 5
    allowed = np.ones((L_q, L_k), dtype=bool)
    allowed[:, 3] = False  # key 3: padding, no query sees it
    allowed[0, 1:] = False  # query 0 sees key 0 only
    q, k, v = (np.random.default_rng(s).standard_normal(shape) for s, shape in ((0, (L_q, 2)), (1, (L_k, 2)),
                                                                                   (2, (L_k, 1))))
    k[3], v[3] = np.nan, np.nan
    p = attention_weights(q, k, mask=allowed)
    with np.errstate(invalid="ignore"):
        leaked = (p @ v)[:, 0]  # 0 * NaN = NaN in every row
    safe = scaled_dot_product_attention(q, k, v, mask=allowed)[:, 0]
    fig, axes = plt.subplots(1, 2, figsize=(6.4, 3.0), gridspec_kw={"width_ratios": [5, 2.2]})
    _grid(axes[0], allowed, "mask; key 3 holds NaN", values=p)
    axes[0].text(3, -0.9, "NaN", ha="center", va="bottom", color="#B00020", fontsize=10)
    ax = axes[1]
    ax.axis("off")
    ax.set_title("output of each query")
    ax.text(0.0, 0.92, "P V        zeroed", transform=ax.transAxes, fontsize=9)
    for i in range(L_q):
        y = 0.75 - 0.2 * i
        ax.text(0.0, y, f"{leaked[i]:.2f}", transform=ax.transAxes, fontsize=10, color="#B00020")
        ax.text(0.55, y, f"{safe[i]:.2f}", transform=ax.transAxes, fontsize=10, color=SEEN)
    fig.tight_layout()
    return _save(fig, path)


def dropout_heads(path: Path) -> Path:
    """Causal weights of one head and the same weights after dropout p = 0.5 in two heads: own patterns, kept x 2."""
    from reference import attention_weights
    from reference.dropout import dropout

    plt = _pyplot()
    L = 5
    q, k = np.random.default_rng(3).standard_normal((L, 2)), np.random.default_rng(4).standard_normal((L, 2))
    p = attention_weights(q, k, is_causal=True)  # (L, L)
    both = dropout(np.stack([p, p]), 0.5, np.random.default_rng(5))  # (2, L, L): one draw per weight and head
    fig, axes = plt.subplots(1, 3, figsize=(6.6, 2.6))
    _grid(axes[0], p > 0, "weights $P$", values=p)
    for h in range(2):
        _grid(axes[h + 1], both[h] > 0, f"head {h}: $P M / (1 - p)$", ylabel="", values=both[h])
    fig.tight_layout(w_pad=0.6)
    return _save(fig, path)


FIGURES["hidden_poison"] = (
    "masks", hidden_poison,
    "A four by five mask whose hidden key 3 holds NaN, the weights in the visible cells, and each query's output: "
    "NaN in every row from P times V alone, finite once the values no query sees are zeroed")
FIGURES["dropout_heads"] = (
    "dropout", dropout_heads,
    "Causal attention weights of five queries, and the same weights after dropout with p = 0.5 in two heads: "
    "different cells dropped in each head, the kept ones doubled")


# ------------------------------------------------------------------------------- SDPA: DEGENERATE SIZES
# (the SDPA chapter's edges, SDPA-9 and SDPA-10: no keys, no queries, d_v != d_k, a negative scale)

def sdpa_degenerate(path: Path) -> Path:
    """Three edges, each computed by the reference: L_k = 0 (every row dead, output exactly 0; L_q = 0 an empty
    output), d_k = 128 with d_v = 192 (the scale from d_k), and one query's weights for scale = +s and -s."""
    from matplotlib.colors import ListedColormap

    from reference import attention_weights, scaled_dot_product_attention

    plt = _pyplot()
    rng = np.random.default_rng(7)
    L_q, d_v = 3, 4
    no_keys = scaled_dot_product_attention(rng.standard_normal((L_q, 2)), np.zeros((0, 2)), np.zeros((0, d_v)))
    no_queries = scaled_dot_product_attention(np.zeros((0, 2)), rng.standard_normal((5, 2)),
                                              rng.standard_normal((5, d_v)))
    fig, axes = plt.subplots(1, 3, figsize=(8.0, 3.0), gridspec_kw={"width_ratios": [1.1, 1.5, 1.6]})
    ax = axes[0]  # L_k = 0: the output, every row dead
    ax.imshow(np.zeros(no_keys.shape), cmap=ListedColormap([HIDDEN]), aspect="equal")
    for i in range(no_keys.shape[0]):
        for j in range(no_keys.shape[1]):
            ax.text(j, i, f"{no_keys[i, j]:g}", ha="center", va="center", fontsize=9)
    ax.set_xticks(range(d_v))
    ax.set_yticks(range(L_q))
    ax.tick_params(length=0)
    for sp in ax.spines.values():
        sp.set_visible(False)
    ax.set_title(f"$L_k = 0$: output {no_keys.shape},\nevery row dead, exactly 0")
    ax.set_xlabel(f"feature\n\n$L_q = 0$: output {no_queries.shape}, empty")
    ax.set_ylabel("query $i$")
    _head_dims(axes[1])
    ax = axes[2]  # a negative scale: the same scores, the weight goes to the least similar key
    q, k = rng.standard_normal((1, 4)), rng.standard_normal((6, 4))
    s, scores = 1.0 / np.sqrt(4), (q @ k.T)[0]
    x = np.arange(6)
    ax.bar(x - 0.2, attention_weights(q, k, scale=s)[0], width=0.4, color=SEEN, label=f"scale $= +{s:g}$")
    ax.bar(x + 0.2, attention_weights(q, k, scale=-s)[0], width=0.4, color="#D55E00", label=f"scale $= -{s:g}$")
    ax.set_xticks(x, [f"{j}\n{scores[j]:.1f}" for j in x])
    ax.set_xlabel(r"key $j$ (its score $q \cdot k_j$)")
    ax.set_ylabel("weight")
    ax.set_title("a negative scale prefers\nthe least similar key")
    ax.legend(loc="upper left", fontsize=9, frameon=False)
    ax.set_ylim(0, 0.75)
    fig.tight_layout(w_pad=1.0)
    return _save(fig, path)


def _head_dims(ax) -> None:
    """Q (L_q, d_k) and K (L_k, d_k) above V (L_k, d_v) and the output (L_q, d_v), for d_k = 128 and d_v = 192,
    drawn to scale."""
    from matplotlib.patches import Rectangle

    from reference import scaled_dot_product_attention

    L_q, L_k, d_k, d_v = 48, 64, 128, 192  # lengths drawn at the head dims' scale
    rng = np.random.default_rng(8)
    q, k, v = rng.standard_normal((L_q, d_k)), rng.standard_normal((L_k, d_k)), rng.standard_normal((L_k, d_v))
    rows = ({"$Q$": q.shape, "$K$": k.shape}, {"$V$": v.shape, "out": scaled_dot_product_attention(q, k, v).shape})
    for y0, shapes in zip((140, 0), rows):
        x0 = 0.0
        for label, (n, cols) in shapes.items():
            colour = "#009E73" if cols == d_k else "#CC79A7"
            ax.add_patch(Rectangle((x0, y0), cols, n, facecolor="#F4F4F4", edgecolor=colour, linewidth=2))
            ax.text(x0 + cols / 2, y0 + n / 2, f"{label}\n({n}, {cols})", ha="center", va="center", fontsize=9)
            x0 += cols + 24
    ax.set_xlim(-6, 2 * d_v + 30)
    ax.set_ylim(-10, 140 + L_k + 6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"$d_k = {d_k}$, $d_v = {d_v}$:\nscale $1/\\sqrt{{d_k}}$, never $d_v$")


FIGURES["sdpa_degenerate"] = (
    "sdpa", sdpa_degenerate,
    "Three edges of attention computed by the reference: with no keys every output row is exactly 0 and with no "
    "queries the output is empty; Q, K, V and the output drawn to scale for d_k = 128 and d_v = 192; and one "
    "query's weights over six keys for a positive and a negative scale, the negative one favouring the least "
    "similar key")


def write_all(directory: Path = FIGURE_DIR) -> list[Path]:
    """Draw every figure into `directory` as NAME.svg; returns the paths. Each is drawn into a temporary folder
    beside it and moved into place whole, so that a reader of the folder (a test comparing the committed figures
    with a fresh drawing, while CI's docs stage draws them again) never sees a file half written."""
    import os
    import tempfile

    import matplotlib

    plt = _pyplot()
    written = []
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory.parent, prefix=".figures-") as drafts:
        with matplotlib.rc_context(RC):
            for name, (_, draw, _) in FIGURES.items():
                drawn = Path(draw(Path(drafts) / f"{name}.svg"))
                os.replace(drawn, directory / drawn.name)
                written.append(directory / drawn.name)
    plt.close("all")
    return written


def markdown(name: str) -> str:
    """The image line a chapter page uses for figure `name`."""
    _, _, alt = FIGURES[name]
    return f"![{alt}](assets/figures/{name}.svg)"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else FIGURE_DIR
    for p in write_all(target):
        print(p)
