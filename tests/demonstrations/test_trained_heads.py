"""MHA-8, demonstrated: the stored trained models (spec_tests/experiments/heads.py) run through the reference.

The experiment trains one causal attention layer to predict both x[i-1] and x[i-3] at every position,
with 2 heads or 1 head at the same D; its first seed's models are stored (heads_trained.npz). Running
them shows what the heads learned; `impl` here is the float64 reference implementation.
"""

import numpy as np

from tests.demonstrations import demonstration
from spec_tests.harness import check

MHA = "multi_head_attention"


def _block(h: int, d_k: int) -> slice:
    """Head h's columns of a (D, D) projection: h*d_k .. (h+1)*d_k."""
    return slice(h * d_k, (h + 1) * d_k)




def _trained(heads: int):
    from spec_tests.experiments import heads as experiment

    return experiment, experiment.load_trained(heads)


def _run_trained(impl, heads: int):
    """The trained model's forward pass with the implementation's multi_head_attention; (accuracy per read-out)."""
    experiment, w = _trained(heads)
    x, targets = experiment.task_batch(256, seed=7)
    h = w["token"][x] + w["position"][np.arange(x.shape[1])]  # (n, T, D) embeddings
    weights = {k: w[k] for k in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")}
    out = check.oracle(impl, MHA, h, h, h, weights, heads, is_causal=True)
    first = max(experiment.OFFSETS)
    accuracy = [float((z[:, first:].argmax(-1) == y[:, first:]).mean())
                for z, y in zip(experiment.readouts(out, w), targets)]
    return experiment, w, h, accuracy


@demonstration("MHA-8")
def test_trained_two_heads_solve_the_two_offset_task_on_this_implementation(impl):
    """The trained 2-head model, run through this implementation's multi_head_attention (same weights, the
    contract's head layout), reads both x[i-1] and x[i-3] right (accuracy >= 0.95 each), and each head
    attends mostly (>= 0.8 of its weight) to its own offset, different for the two heads."""
    experiment, w, h, accuracy = _run_trained(impl, 2)
    check.holds(impl, min(accuracy) >= 0.95, "a trained 2-head model reads both offsets on this implementation",
                [f"accuracy on x[i-1], x[i-3]: {accuracy}"])
    first, d_k = max(experiment.OFFSETS), w["w_q"].shape[0] // 2
    rows = np.arange(first, h.shape[1])
    favourite = []
    for head in range(2):
        q = h @ w["w_q"][:, _block(head, d_k)] + w["b_q"][_block(head, d_k)]
        k = h @ w["w_k"][:, _block(head, d_k)] + w["b_k"][_block(head, d_k)]
        p = impl.attention_weights(q, k, is_causal=True)  # (n, T, T)
        by_offset = np.array([p[:, rows, rows - o].mean() for o in range(first + 1)])
        favourite.append(int(np.argmax(by_offset)))
        check.holds(impl, by_offset.max() >= 0.8, f"head {head} attends mostly to one relative position",
                    [f"mean weight on offsets 0..{first}: {np.round(by_offset, 3).tolist()}"])
    check.holds(impl, sorted(favourite) == sorted(experiment.OFFSETS), "the two heads attend to the two offsets "
                f"the task needs, {experiment.OFFSETS}, one each", [f"favourite offsets: {favourite}"])


@demonstration("MHA-8")
def test_trained_single_head_cannot_read_both_offsets(impl):
    """The 1-head model at the same D, trained the same way, run through this implementation: one softmax row
    must serve both read-outs, and their mean accuracy stays far below the 2-head model's (<= 0.8)."""
    _, _, _, accuracy = _run_trained(impl, 1)
    check.holds(impl, float(np.mean(accuracy)) <= 0.8, "a single head at equal D does not read both offsets",
                [f"accuracy on x[i-1], x[i-3]: {accuracy}"])
