"""RES-2: gradient norms per layer at initialisation, Post-LN against Pre-LN (lecture note 2 §3.3; Xiong et al. 2020).

A stack of N Transformer encoder layers (self-attention and a ReLU feed-forward network, each in a
residual block; `torch.nn.TransformerEncoderLayer` with `norm_first=False` for Post-LN and `True`
for Pre-LN, the latter followed by a final LayerNorm as Pre-LN models are), Xavier-uniform weights,
zero biases, LayerNorm gains 1 and shifts 0, no dropout. Input: unit-normal vectors; loss:
cross-entropy of a linear read-out against random labels. One backward pass at initialisation,
then the Frobenius norm of each layer's parameter gradient (all its matrices and vectors
together), and separately of its second feed-forward matrix W_2 (the quantity Xiong et al. plot).

The note's claim (lecture note 2's closing paragraph, Xiong et al.'s Figure 3): Post-LN's gradients
grow toward the output layers, Pre-LN's stay level. What this run shows is written next to the
numbers in docs/residual.md; `ratio_last_first` and `post_over_pre_last` are what the test asserts.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Setup:
    d_model: int = 128
    heads: int = 8
    d_ff: int = 512
    batch: int = 8
    length: int = 32
    classes: int = 100


@dataclass
class Result:
    norm_first: bool  # True: Pre-LN
    layers: int
    seed: int
    grad_norm: list[float]  # per layer, all of the layer's parameters
    grad_norm_w2: list[float]  # per layer, the feed-forward network's second matrix

    @property
    def placement(self) -> str:
        return "Pre-LN" if self.norm_first else "Post-LN"

    @property
    def ratio_last_first(self) -> float:
        """> 1: gradients grow toward the output; < 1: they shrink toward it."""
        return self.grad_norm[-1] / self.grad_norm[0]


def gradient_norms(norm_first: bool, layers: int, seed: int, setup: Setup = Setup()) -> Result:
    """One backward pass through a freshly initialised stack; the gradient norm of every layer."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    data = torch.Generator().manual_seed(seed)
    D = setup.d_model
    stack = nn.ModuleList(nn.TransformerEncoderLayer(D, setup.heads, setup.d_ff, dropout=0.0, batch_first=True,
                                                     norm_first=norm_first) for _ in range(layers))
    for name, p in stack.named_parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)  # Var(W) = 2 / (fan_in + fan_out)
        elif "norm" not in name:
            nn.init.zeros_(p)  # biases; LayerNorm keeps gamma = 1, beta = 0
    final = nn.LayerNorm(D) if norm_first else nn.Identity()  # a Pre-LN stack ends with one more LN
    head = nn.Linear(D, setup.classes)
    nn.init.xavier_uniform_(head.weight)
    nn.init.zeros_(head.bias)
    x = torch.randn(setup.batch, setup.length, D, generator=data)  # (B, L, D)
    y = torch.randint(0, setup.classes, (setup.batch, setup.length), generator=data)
    h = x
    for layer in stack:
        h = layer(h)  # (B, L, D): both placements keep the shape (RES-1)
    loss = nn.functional.cross_entropy(head(final(h)).reshape(-1, setup.classes), y.reshape(-1))
    loss.backward()
    total = [float(torch.sqrt(sum((p.grad ** 2).sum() for p in layer.parameters()))) for layer in stack]
    w2 = [float(layer.linear2.weight.grad.norm()) for layer in stack]
    return Result(norm_first, layers, seed, total, w2)


def run(depths=(6, 12), seeds=(0, 1, 2, 3), setup: Setup = Setup()) -> list[Result]:
    return [gradient_norms(nf, n, s, setup) for n in depths for nf in (False, True) for s in seeds]


def post_over_pre_last(results: list[Result], layers: int, seed: int) -> float:
    """Post-LN's last-layer gradient norm over Pre-LN's, same depth and seed (Xiong et al.: grows as sqrt(N))."""
    post = next(r for r in results if r.layers == layers and r.seed == seed and not r.norm_first)
    pre = next(r for r in results if r.layers == layers and r.seed == seed and r.norm_first)
    return post.grad_norm[-1] / pre.grad_norm[-1]


def write(results: list[Result], setup: Setup, out_dir) -> None:
    """docs/generated/residual_gradient_norms.{txt,json,svg}."""
    from spec_tests.experiments import pyplot, save_svg

    depths = sorted({r.layers for r in results})
    seeds = sorted({r.seed for r in results})
    lines = ["| layers | placement | mean gradient norm, layer 1 → N (all parameters) | last / first, per seed | "
             "W₂ only: last / first (mean) |", "| --- | --- | --- | --- | --- |"]
    for n in depths:
        for nf in (False, True):
            rs = [r for r in results if r.layers == n and r.norm_first == nf]
            mean = np.mean([r.grad_norm for r in rs], axis=0)
            w2 = np.mean([r.grad_norm_w2[-1] / r.grad_norm_w2[0] for r in rs])
            lines.append(f"| {n} | {rs[0].placement} | {' '.join(f'{v:.2f}' for v in mean)} | "
                         f"{', '.join(f'{r.ratio_last_first:.2f}' for r in rs)} | {w2:.2f} |")
    lines += ["", "| layers | Post-LN / Pre-LN gradient norm at the last layer, per seed |", "| --- | --- |"]
    for n in depths:
        lines.append(f"| {n} | {', '.join(f'{post_over_pre_last(results, n, s):.2f}' for s in seeds)} |")
    caption = (f"\nD = {setup.d_model}, {setup.heads} heads, feed-forward width {setup.d_ff}, batch {setup.batch} x "
               f"{setup.length} tokens, seeds {', '.join(map(str, seeds))}. Produced by `python -m spec_tests.experiments` "
               "(spec_tests/experiments/norm_placement.py).\n")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "residual_gradient_norms.txt").write_text("\n".join(lines) + "\n" + caption)
    (out_dir / "residual_gradient_norms.json").write_text(json.dumps(
        {"setup": asdict(setup), "results": [asdict(r) for r in results]}, indent=1) + "\n")

    plt = pyplot()
    fig, axes = plt.subplots(1, len(depths), figsize=(4.2 * len(depths), 3.0), squeeze=False)
    for ax, n in zip(axes[0], depths):
        for nf, colour in ((False, "tab:red"), (True, "tab:blue")):
            rs = [r for r in results if r.layers == n and r.norm_first == nf]
            for r in rs:
                ax.plot(range(1, n + 1), r.grad_norm, color=colour, alpha=0.25, linewidth=0.8)
            ax.plot(range(1, n + 1), np.mean([r.grad_norm for r in rs], axis=0), color=colour, linewidth=2,
                    marker="o", markersize=3, label=rs[0].placement)
        ax.set_title(f"{n} layers", fontsize=10)
        ax.set_xlabel("layer (1 = nearest the input)")
        ax.set_ylabel("gradient norm at initialisation")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    save_svg(fig, out_dir / "residual_gradient_norms.svg")
    plt.close(fig)
