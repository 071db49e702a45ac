"""MHA-8: do attention heads specialise, and does multi-head beat single-head at equal D? (lecture note 1 §4)

The task needs two different relative positions at once: from a sequence of random tokens
x_0 .. x_{T-1} over a vocabulary of V, predict at every position i >= 3 both x_{i-1} and x_{i-3}
(two classifiers on the same attention output). The model is one causal attention layer and
nothing else: token + learned position embeddings (D), Q/K/V/O projections, H heads, and two
linear read-outs; no residual, no MLP, so whatever reaches the read-outs went through attention.

With H = 2 each head can attend to one offset and the concatenation carries both tokens apart.
With H = 1 at the same D one softmax row must serve both read-outs: it can only mix the two tokens,
so one of them is read well and the other poorly. Trained briefly by backpropagation from
seeded random initialisations, we report each read-out's accuracy on fresh sequences and each
head's average attention weight at every offset i - j.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

OFFSETS = (1, 3)  # the two relative positions the task needs


@dataclass(frozen=True)
class Setup:
    """The task, the model's width and the training budget."""

    vocab: int = 24
    length: int = 10
    d_model: int = 16
    steps: int = 300
    batch: int = 32
    lr: float = 1e-2
    test_batch: int = 512


@dataclass
class Result:
    heads: int
    seed: int
    accuracy: list[float]  # one per offset: how often x_{i - offset} is predicted right
    pattern: list[list[float]]  # [head][offset 0 .. max(OFFSETS)]: mean attention weight on key i - offset
    favourite: list[int] = field(default_factory=list)  # each head's offset with the most weight
    weights: dict | None = field(default=None, repr=False, compare=False)  # the trained model, as NumPy arrays

    @property
    def mean_accuracy(self) -> float:
        return float(np.mean(self.accuracy))


def _model(torch, setup: Setup, heads: int):
    nn = torch.nn

    class TwoOffsetAttention(nn.Module):
        """Embeddings -> one causal multi-head attention layer -> one read-out per offset."""

        def __init__(self):
            super().__init__()
            D = setup.d_model
            self.heads, self.d_k = heads, D // heads
            self.token, self.position = nn.Embedding(setup.vocab, D), nn.Embedding(setup.length, D)
            self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(D, D) for _ in range(4))
            self.read = nn.ModuleList(nn.Linear(D, setup.vocab) for _ in OFFSETS)

        def forward(self, x):
            B, T = x.shape
            h = self.token(x) + self.position(torch.arange(T))  # (B, T, D)
            q, k, v = (w(h).view(B, T, self.heads, self.d_k).transpose(1, 2)
                       for w in (self.w_q, self.w_k, self.w_v))  # (B, H, T, d_k)
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.d_k)  # (B, H, T, T)
            causal = torch.ones(T, T, dtype=torch.bool).tril()
            p = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)  # (B, H, T, T)
            out = self.w_o((p @ v).transpose(1, 2).reshape(B, T, -1))  # concat heads, then W_O: (B, T, D)
            return [read(out) for read in self.read], p

    return TwoOffsetAttention()


def _batch(torch, generator, n: int, setup: Setup):
    x = torch.randint(0, setup.vocab, (n, setup.length), generator=generator)
    return x, [torch.roll(x, shifts=o, dims=1) for o in OFFSETS]  # targets: y[:, i] = x[:, i - o]


def train(heads: int, seed: int, setup: Setup = Setup()) -> Result:
    """Train one model from a seeded initialisation; evaluate on fresh sequences."""
    import torch

    torch.manual_seed(seed)
    data = torch.Generator().manual_seed(seed)
    model = _model(torch, setup, heads)
    opt = torch.optim.Adam(model.parameters(), lr=setup.lr)
    first = max(OFFSETS)  # positions with both targets inside the sequence
    for _ in range(setup.steps):
        x, ys = _batch(torch, data, setup.batch, setup)
        logits, _ = model(x)
        loss = sum(torch.nn.functional.cross_entropy(z[:, first:].reshape(-1, setup.vocab), y[:, first:].reshape(-1))
                   for z, y in zip(logits, ys))
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        x, ys = _batch(torch, torch.Generator().manual_seed(10**6 + seed), setup.test_batch, setup)
        logits, p = model(x)
        accuracy = [float((z[:, first:].argmax(-1) == y[:, first:]).float().mean()) for z, y in zip(logits, ys)]
        rows = torch.arange(first, setup.length)
        pattern = [[float(p[:, h, rows, rows - o].mean()) for o in range(first + 1)] for h in range(heads)]
    return Result(heads, seed, accuracy, pattern, [int(np.argmax(row)) for row in pattern], _export(model))


def _export(model) -> dict:
    """The trained model as float64 arrays, projections in the contract's y = x W + b orientation."""
    def t(x):
        return x.detach().double().numpy().copy()

    out = {"token": t(model.token.weight), "position": t(model.position.weight)}  # (V, D), (T, D)
    for name in ("q", "k", "v", "o"):
        lin = getattr(model, f"w_{name}")
        out[f"w_{name}"], out[f"b_{name}"] = t(lin.weight).T, t(lin.bias)  # nn.Linear's (out, in) -> (in, out)
    for n, read in enumerate(model.read):
        out[f"read_{n}"], out[f"read_bias_{n}"] = t(read.weight).T, t(read.bias)  # (D, V), (V,)
    return out


TRAINED = Path(__file__).resolve().parent / "heads_trained.npz"


def save_trained(results: list[Result], path: Path = TRAINED) -> None:
    """The 1-head and 2-head models of the first random seed, for the MHA-8 demonstration on the stored models."""
    seed = results[0].seed
    arrays = {f"h{r.heads}/{k}": v for r in results if r.seed == seed for k, v in r.weights.items()}
    np.savez(path, **arrays)


def load_trained(heads: int, path: Path = TRAINED) -> dict:
    with np.load(path) as data:
        return {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith(f"h{heads}/")}


def task_batch(n: int, seed: int, setup: Setup = Setup()):
    """n sequences of the task as NumPy: tokens (n, T) and one target array per offset."""
    x = np.random.default_rng(seed).integers(0, setup.vocab, (n, setup.length))
    return x, [np.roll(x, o, axis=1) for o in OFFSETS]


def readouts(out, weights) -> list:
    """Logits of each read-out from the attention output (n, T, D)."""
    return [out @ weights[f"read_{n}"] + weights[f"read_bias_{n}"] for n in range(len(OFFSETS))]


def run(seeds=(0, 1, 2), setup: Setup = Setup()) -> list[Result]:
    """1-head and 2-head models at the same D, for each seed."""
    return [train(h, s, setup) for s in seeds for h in (1, 2)]


def write(results: list[Result], setup: Setup, out_dir) -> None:
    """docs/generated/heads_specialise.{txt,json,svg}: the accuracy table and the attention patterns."""
    from spec_tests.experiments import pyplot, save_svg

    first = max(OFFSETS)
    lines = [f"| heads | d_k | seed | accuracy on x[i-{OFFSETS[0]}] | accuracy on x[i-{OFFSETS[1]}] | "
             f"mean weight per head on offsets 0..{first} |", "| --- | --- | --- | --- | --- | --- |"]
    for r in results:
        pattern = "; ".join("[" + ", ".join(f"{w:.2f}" for w in row) + "]" for row in r.pattern)
        lines.append(f"| {r.heads} | {setup.d_model // r.heads} | {r.seed} | {r.accuracy[0]:.3f} | "
                     f"{r.accuracy[1]:.3f} | {pattern} |")
    for h in (1, 2):
        accs = [r.mean_accuracy for r in results if r.heads == h]
        lines.append(f"| **{h}** | | mean | **{np.mean([r.accuracy[0] for r in results if r.heads == h]):.3f}** | "
                     f"**{np.mean([r.accuracy[1] for r in results if r.heads == h]):.3f}** | "
                     f"both read-outs: {np.mean(accs):.3f} |")
    caption = (f"\nVocabulary {setup.vocab}, length {setup.length}, D = {setup.d_model}, {setup.steps} Adam steps of "
               f"{setup.batch} sequences (lr {setup.lr}), evaluated on {setup.test_batch} fresh sequences; chance is "
               f"{1 / setup.vocab:.3f}. Produced by `python -m spec_tests.experiments` (spec_tests/experiments/heads.py).\n")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "heads_specialise.txt").write_text("\n".join(lines) + "\n" + caption)
    (out_dir / "heads_specialise.json").write_text(json.dumps(
        {"setup": asdict(setup), "offsets": OFFSETS,
         "results": [{k: v for k, v in asdict(r).items() if k != "weights"} for r in results]}, indent=1) + "\n")

    plt = pyplot()
    shown = [r for r in results if r.seed == results[0].seed]  # one seed: the 1-head and the 2-head model
    fig, axes = plt.subplots(1, len(shown), figsize=(3.6 * len(shown), 2.4), squeeze=False)
    for ax, r in zip(axes[0], shown):
        im = ax.imshow(np.array(r.pattern), vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(first + 1), [f"i-{o}" if o else "i" for o in range(first + 1)])
        ax.set_yticks(range(r.heads), [f"head {h}" for h in range(r.heads)])
        ax.set_xlabel("key position")
        ax.set_title(f"{r.heads} head{'s' if r.heads > 1 else ''} (acc {r.accuracy[0]:.2f} / {r.accuracy[1]:.2f})",
                     fontsize=9)
        for h, row in enumerate(r.pattern):
            for o, w in enumerate(row):
                ax.text(o, h, f"{w:.2f}", ha="center", va="center", color="white" if w < 0.6 else "black",
                        fontsize=8)
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="mean attention weight")
    save_svg(fig, out_dir / "heads_specialise.svg")
    plt.close(fig)
