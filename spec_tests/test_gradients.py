"""Chapter: gradients (docs/gradients.md). Claims GRAD-1 .. GRAD-3.

"Trained by backpropagation" (lecture note 1 §4): every piece of attention must pass gradients, and pass the
right ones.

    GRAD-1  autograd's gradients of SDPA, MHA and LayerNorm (PyTorch implementations, float64) match
            central finite differences of the float64 reference (torch.autograd.gradcheck's comparison)
    GRAD-2  the analytic backward passes a learner may write in NumPy,
                layer_norm_backward(dy, x, gamma, eps=1e-5) -> (dx, dgamma, dbeta)
                scaled_dot_product_attention_backward(dout, q, k, v, mask=None, is_causal=False, scale=None)
                    -> (dq, dk, dv)
            match the reference's (reference/layer_norm_backward.py, reference/attention_backward.py) and
            central finite differences of the float64 reference's forward pass
    GRAD-3  a query with no visible key gets zero gradients, never NaN; under is_causal, no gradient flows
            to a position from any later one

A finite difference (f(x + h) - f(x - h)) / 2h of the float64 reference errs by about h² |f'''| + eps |f| / h;
with h = 1e-6 that is ~1e-10 of the values involved, so the comparison allows 1e-6 of them (plus the
dtype's own rule of CONTRACT.md for float32).
"""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import reference
from spec_tests.harness import carried, check, tolerance
from spec_tests.harness.feedback import SpecFailure
from spec_tests.harness.strategies import SEEDS, AttentionCase, MHACase, attention_cases, mha_cases, normal, \
    random_mask
from spec_tests.harness.subject import not_applicable

claim = pytest.mark.claim
SDPA = "scaled_dot_product_attention"
LN_BACKWARD = "layer_norm_backward"
SDPA_BACKWARD = "scaled_dot_product_attention_backward"
FD_STEP = 1e-6
FD_RTOL = 1e-6  # how far a central difference of the float64 reference may be from the true gradient


def numerical_gradient(f, x: np.ndarray, h: float = FD_STEP) -> np.ndarray:
    """∂f/∂x by central differences, one element at a time: (f(x + h e_i) - f(x - h e_i)) / 2h."""
    grad = np.zeros_like(x, dtype=np.float64)
    for i in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        grad[i] = (f(up) - f(down)) / (2 * h)
    return grad


def _against_finite_differences(impl, seen, numerical, what, yard=None, size=None, yard_at=None):
    """The implementation's gradient against central differences of the float64 reference. `yard_at(dtype)`: the
    yardstick at another dtype, for a float64 call judged at the lower precision it reached (carried.py: PREC-3
    pays for that step, once)."""
    def at(dtype, yard_):
        check.compare(impl, seen, numerical, tolerance.finite_difference_bound(dtype, numerical, yard_, size, FD_RTOL),
                      what)

    try:
        at(impl.dtype, yard)
    except SpecFailure as failure:
        carried.judge_precision(impl, failure, lambda dtype: at(dtype, yard_at(dtype) if yard_at else None))


# ---------------------------------------------------------------------------------- GRAD-1
# torch.autograd.gradcheck's comparison, autograd against central differences, made so that it also runs
# when the implementation sits in an isolated worker (grading): autograd runs there, on the implementation's
# own tensors; the finite differences are taken here, of the float64 reference; the loss is the sum of a random
# selection of outputs, a vector-Jacobian product with a 0/1 cotangent (and once with all ones).

def _forward(impl, fname: str, reference_fn, args, kwargs, *rest):
    """The forward whose central differences judge autograd's gradients: the float64 reference's when the
    implementation's fname(*args, *rest, **kwargs) matches it, else its own (called off the record). A forward that
    differs from the reference fails its own claims (charged there, error carried forward; or it matches only the
    reference built on its own lower functions, which fail theirs): GRAD-1 judges that autograd differentiates the
    forward the implementation computes."""
    def own(*a):
        with carried.off_the_record(impl):
            return np.asarray(impl.call(fname, *a, *rest, **kwargs), dtype=np.float64)

    try:
        check.oracle(impl, fname, *args, *rest, **kwargs)
    except SpecFailure as failure:
        try:
            own(*args)
        except Exception:  # noqa: BLE001 - a forward that raises has nothing to differentiate
            raise failure from None
    else:
        if not carried.carried_here():
            return lambda *a: reference_fn(*a, *rest, **kwargs)
    carried.note_carried(f"central differences of your own {fname}, whose output already differs from the "
                         "reference's (charged to its own claims)")
    return own


def _torch_float64(impl):
    if impl.backend != "torch":
        not_applicable(f"GRAD-1 checks autograd, and {impl.name} is a {impl.backend} implementation "
                       "(its analytic backward passes are GRAD-2)")
    if impl.dtype != "float64":
        not_applicable(f"gradients are compared with float64 finite differences; this run is {impl.dtype}")


DETACHED = (" (this output does not require grad: it was computed outside autograd, through NumPy or "
            "after .detach(), so autograd gives no gradient at all)")


def _autograd(impl, run, inputs, select=None):
    """Gradients of sum(out[select]) by the implementation's autograd, one per input, as float64 NumPy,
    and "" or DETACHED.

    `run(*leaves)` calls the implementation on native tensors; inputs are copied first (a float64 tensor
    made from a NumPy array shares its memory, and self-attention passes one array three times). An output
    that does not require grad is a constant to autograd: its gradients are zero, which is right when it
    is (every query sees nothing) and caught by the finite differences when it is not."""
    leaves = [impl.native(np.array(x, copy=True)).requires_grad_(True) for x in inputs]
    out = run(*leaves)
    if not out.requires_grad:
        return [np.zeros(np.shape(x)) for x in inputs], DETACHED
    (out if select is None else out[select]).sum().backward()
    return [np.zeros(np.shape(x)) if leaf.grad is None else impl.to_numpy(leaf.grad)
            for x, leaf in zip(inputs, leaves)], ""


def _selections(seed, shape):
    """Two cotangents: all ones, and a random half of the outputs."""
    return [None, np.random.default_rng(seed).random(shape) < 0.5]


@claim("GRAD-1")
@given(case=attention_cases(causal=False, lengths=st.integers(1, 4), dims=st.integers(1, 3),
                            batch=st.sampled_from([(), (2,)])))
@example(case=AttentionCase((), 3, 3, 2, 3, seed=0, mask_shape=(3, 3), density=0.6))
def test_sdpa_gradients_match_finite_differences(impl, case):
    """Autograd's gradients of scaled_dot_product_attention in q, k and v (with masks) match
    central differences of the float64 reference."""
    _torch_float64(impl)
    kwargs = case.kwargs
    inputs = [case.q, case.k, case.v]
    forward = _forward(impl, SDPA, reference.scaled_dot_product_attention, inputs, kwargs)
    native_kwargs = impl.native(kwargs)
    for select in _selections(case.seed, forward(*inputs).shape):
        grads, detached = _autograd(impl, lambda q, k, v: impl.call_native(SDPA, q, k, v, **native_kwargs), inputs,
                                    select)

        def loss(q, k, v, select=select):
            y = forward(q, k, v)
            return float(y.sum() if select is None else y[select].sum())

        for name, g, n in zip("qkv", grads, range(3)):
            numerical = numerical_gradient(lambda t, n=n: loss(*inputs[:n], t, *inputs[n + 1:]), inputs[n])
            _against_finite_differences(impl, g, numerical, f"autograd's d sum(out{'' if select is None else '[S]'})"
                                        f" / d {name} against central differences of the reference{detached}")


@claim("GRAD-1")
@given(case=mha_cases(lengths=st.integers(1, 3), max_heads=2).filter(lambda c: c.D <= 4))
@example(case=MHACase(1, 3, 3, 2, 2, seed=0, self_attention=False, mask_kind="padding", is_causal=True))
def test_multi_head_gradients_match_finite_differences(impl, case):
    """Autograd's gradients of multi_head_attention in its inputs and every weight and bias match central
    differences of the float64 reference."""
    _torch_float64(impl)
    names = sorted(case.weights)
    inputs = [case.query, case.key, case.value, *(case.weights[n] for n in names)]
    native_kwargs = impl.native(case.kwargs)
    mha = _forward(impl, "multi_head_attention",
                   lambda q, k, v, w, H, **kw: reference.multi_head_attention(q, k, v, w, H, **kw),
                   inputs[:3] + [case.weights], case.kwargs, case.num_heads)

    def run(query, key, value, *weights):
        return impl.call_native("multi_head_attention", query, key, value, dict(zip(names, weights)),
                                case.num_heads, **native_kwargs)

    def loss(query, key, value, *weights, select=None):
        y = mha(query, key, value, dict(zip(names, weights)))
        return float(y.sum() if select is None else y[select].sum())

    for select in _selections(case.seed, (case.B, case.L_q, case.D)):
        grads, detached = _autograd(impl, run, inputs, select)
        for n, (name, g) in enumerate(zip(["query", "key", "value", *names], grads)):
            numerical = numerical_gradient(lambda t, n=n: loss(*inputs[:n], t, *inputs[n + 1:], select=select),
                                           inputs[n])
            _against_finite_differences(impl, g, numerical, f"autograd's gradient of multi_head_attention with "
                                        f"respect to {name} against central differences of the reference{detached}")


@claim("GRAD-1")
@given(seed=SEEDS, rows=st.integers(1, 3), D=st.integers(2, 6), offset=st.sampled_from([0.0, 5.0]))
def test_layer_norm_gradients_match_finite_differences(impl, seed, rows, D, offset):
    """Autograd's gradients of layer_norm in x, gamma and beta match central differences of the reference."""
    _torch_float64(impl)
    inputs = [normal(seed, (rows, D), offset=offset), normal(seed + 1, (D,), 0.5, 1.0), normal(seed + 2, (D,))]
    forward = _forward(impl, "layer_norm", reference.layer_norm, inputs, {})
    for select in _selections(seed, (rows, D)):
        grads, detached = _autograd(impl, lambda x, g, b: impl.call_native("layer_norm", x, g, b), inputs, select)
        for n, (name, g) in enumerate(zip(("x", "gamma", "beta"), grads)):
            def loss(t, n=n, select=select):
                y = forward(*inputs[:n], t, *inputs[n + 1:])
                return float(y.sum() if select is None else y[select].sum())

            _against_finite_differences(impl, g, numerical_gradient(loss, inputs[n]),
                                        f"autograd's gradient of layer_norm with respect to {name} against "
                                        f"central differences of the reference{detached}",
                                        size=tolerance.layer_norm_backward_size(np.ones((rows, D)), *inputs[:2]))


# ---------------------------------------------------------------------------------- GRAD-2
@claim("GRAD-2")
@given(seed=SEEDS, batch=st.lists(st.integers(1, 3), max_size=2).map(tuple), D=st.integers(2, 8),
       offset=st.sampled_from([0.0, 3.0, -20.0]), spread=st.sampled_from([1.0, 0.1, 10.0]),
       eps=st.sampled_from([1e-5, 1e-3]))
@example(seed=0, batch=(2,), D=4, offset=0.0, spread=1.0, eps=1e-5)
def test_layer_norm_backward_matches_the_numerical_gradient(impl, seed, batch, D, offset, spread, eps):
    """(dx, dgamma, dbeta) equal the reference's and central differences of sum(dy * layer_norm(x, gamma, beta))."""
    x = normal(seed, (*batch, D), spread, offset)
    gamma, beta, dy = normal(seed + 1, (D,), 0.5, 1.0), normal(seed + 2, (D,)), normal(seed + 3, (*batch, D))
    # eps=1e-5, the contract's default, is left to the implementation's default
    dx, dgamma, dbeta = check.oracle(impl, LN_BACKWARD, dy, x, gamma, **({} if eps == 1e-5 else {"eps": eps}))
    x, gamma, beta, dy = impl.round((x, gamma, beta, dy))

    def loss(x_=x, g_=gamma, b_=beta):
        return float((dy * reference.layer_norm(x_, g_, b_, eps)).sum())

    yard = None if impl.dtype == "float64" else tolerance.yardstick(reference.layer_norm_backward, (dy, x, gamma),
                                                                    {"eps": eps}, impl.dtype)
    for n, (name, seen, wrt) in enumerate((("dx", dx, x), ("dgamma", dgamma, gamma), ("dbeta", dbeta, beta))):
        numerical = numerical_gradient(lambda t, name=name: loss(**{"dx": {"x_": t}, "dgamma": {"g_": t},
                                                                   "dbeta": {"b_": t}}[name]), wrt)
        _against_finite_differences(impl, seen, numerical, f"layer_norm_backward's {name} against central "
                                    f"differences of the reference's layer_norm", None if yard is None else yard[n],
                                    tolerance.layer_norm_backward_size(dy, x, gamma, eps),
                                    lambda d, n=n: tolerance.yardstick(reference.layer_norm_backward, (dy, x, gamma),
                                                                       {"eps": eps}, d)[n])


@claim("GRAD-2")
@given(case=attention_cases(causal=False, lengths=st.integers(1, 5), dims=st.integers(1, 4)),
       scale=st.sampled_from([None, 0.7]))
@example(case=AttentionCase((2,), 3, 3, 2, 3, seed=0, mask_shape=(2, 3, 3), density=0.6), scale=None)
def test_sdpa_backward_matches_the_numerical_gradient(impl, case, scale):
    """(dq, dk, dv) equal the reference's and central differences of sum(dout * attention(q, k, v)), with masks, broadcast leading dims and an explicit scale."""
    out_shape = np.broadcast_shapes(case.q.shape[:-1], case.k.shape[:-2] + (1,), case.v.shape[:-2] + (1,)) + (case.d_v,)
    dout = normal(case.seed + 7, out_shape)
    if scale is None:  # a default scale that fails SDPA-4 is charged there: the backward is judged given the scale
        scale = carried.scale_if_charged(impl, case.q).get("scale")
    kwargs = dict(mask=case.mask, is_causal=case.is_causal, scale=scale)
    dq, dk, dv = check.oracle(impl, SDPA_BACKWARD, dout, case.q, case.k, case.v, **kwargs)
    if carried.carried_here():  # judged on the weights of its own attention_weights, which fail SDPA-1 (charged
        return  # there): the reference's forward, differentiated below, is not the forward this backward goes with
    dout, q, k, v = impl.round((dout, case.q, case.k, case.v))

    def loss(q_=q, k_=k, v_=v):
        return float((dout * reference.scaled_dot_product_attention(q_, k_, v_, **kwargs)).sum())

    yard = None if impl.dtype == "float64" else tolerance.yardstick(
        reference.scaled_dot_product_attention_backward, (dout, q, k, v), kwargs, impl.dtype)
    for n, (name, seen, wrt, key) in enumerate((("dq", dq, q, "q_"), ("dk", dk, k, "k_"), ("dv", dv, v, "v_"))):
        numerical = numerical_gradient(lambda t, key=key: loss(**{key: t}), wrt)
        _against_finite_differences(impl, seen, numerical, f"scaled_dot_product_attention_backward's {name} against "
                                    "central differences of the reference's attention", None if yard is None else yard[n],
                                    tolerance.attention_backward_size(dout, q, k, v, scale),
                                    lambda d, n=n: tolerance.yardstick(reference.scaled_dot_product_attention_backward,
                                                                       (dout, q, k, v), kwargs, d)[n])


@claim("GRAD-2")
@given(seed=SEEDS, B=st.integers(2, 3), L_q=st.integers(1, 4), L_k=st.integers(1, 4), d=st.integers(1, 3),
       shared=st.sampled_from(["keys and values", "queries"]), axis=st.sampled_from(["none", "of size 1"]))
@example(seed=0, B=2, L_q=3, L_k=2, d=2, shared="keys and values", axis="none")
@example(seed=1, B=3, L_q=2, L_k=3, d=2, shared="keys and values", axis="none")  # B = L_k: (B, d), (L_k, d) agree
@example(seed=2, B=2, L_q=2, L_k=3, d=2, shared="queries", axis="none")
@example(seed=3, B=2, L_q=2, L_k=3, d=2, shared="keys and values", axis="of size 1")
def test_sdpa_backward_sums_the_gradient_of_a_shared_input_over_the_batch(impl, seed, B, L_q, L_k, d, shared, axis):
    """An input without the batch axis, or with a batch axis of size 1 (k, v (L_k, d) or (1, L_k, d) for queries
    (B, L_q, d); or q for keys and values (B, L_k, d)) is broadcast over the batch: its gradient has its own shape
    and sums every batch element's."""
    own = () if axis == "none" else (1,)
    q_lead, kv_lead = ((B,), own) if shared == "keys and values" else (own, (B,))
    q, k, v = normal(seed, (*q_lead, L_q, d)), normal(seed + 1, (*kv_lead, L_k, d)), normal(seed + 2, (*kv_lead, L_k, d))
    dout = normal(seed + 7, (B, L_q, d))  # (B, L_q, d_v): the output has the batch axis
    check.oracle(impl, SDPA_BACKWARD, dout, q, k, v)


@claim("GRAD-2")
def test_backward_passes_reject_a_gradient_of_the_wrong_shape(impl):
    """dy must have x's shape, dout the output's (..., L_q, d_v): otherwise ValueError naming the shapes."""
    x, gamma = normal(0, (3, 4)), np.ones(4)
    check.raises_value_error(impl, LN_BACKWARD, (normal(1, (3, 5)), x, gamma), {}, names=("(3, 5)",))
    q, k, v = normal(0, (2, 3)), normal(1, (4, 3)), normal(2, (4, 5))
    check.raises_value_error(impl, SDPA_BACKWARD, (normal(3, (2, 3)), q, k, v), {}, names=("(2, 3)", "(2, 5)"))


# ---------------------------------------------------------------------------------- GRAD-3
def _torch(impl):
    if impl.backend != "torch":
        not_applicable(f"this half of GRAD-3 checks autograd; {impl.name} is {impl.backend} "
                       "(its analytic backward pass is checked by the other half)")


@claim("GRAD-3")
@given(seed=SEEDS, L_q=st.integers(1, 6), L_k=st.integers(1, 6), d=st.integers(1, 4), dead=st.integers(1, 3))
def test_fully_masked_rows_give_zero_gradients_by_autograd(impl, seed, L_q, L_k, d, dead):
    """A query with no visible key: every gradient is finite, its own dq row is exactly 0, and a loss on
    those rows alone gives exactly zero gradient everywhere (not NaN, as an unguarded -inf fill does)."""
    _torch(impl)
    mask = random_mask(seed, (2, L_q, L_k), 0.7, dead_rows=dead)
    dead_rows = ~mask.any(axis=-1)  # (2, L_q)
    inputs = [normal(seed, (2, L_q, d)), normal(seed + 1, (2, L_k, d)), normal(seed + 2, (2, L_k, d))]
    native_mask = impl.native(mask)

    def run(q, k, v):
        return impl.call_native(SDPA, q, k, v, mask=native_mask)

    grads, _ = _autograd(impl, run, inputs)
    for name, g in zip("qkv", grads):
        check.holds(impl, bool(np.isfinite(g).all()), f"d sum(out) / d {name} is finite with fully masked rows",
                    [f"non-finite entries: {int((~np.isfinite(g)).sum())}"], [g])
    check.exactly(impl, grads[0][dead_rows], np.zeros((int(dead_rows.sum()), d)),
                  "the gradient with respect to a fully masked query row is exactly 0")
    on_dead = np.broadcast_to(dead_rows[..., None], (2, L_q, d)).copy()  # the outputs of the dead rows
    for name, g in zip("qkv", _autograd(impl, run, inputs, on_dead)[0]):
        check.exactly(impl, g, np.zeros_like(g), f"a loss on the fully masked rows alone has d/d{name} exactly 0")


@claim("GRAD-3")
@given(seed=SEEDS, L_q=st.integers(1, 6), L_k=st.integers(1, 6), d=st.integers(1, 4), dead=st.integers(1, 3))
def test_fully_masked_rows_give_zero_gradients_by_backward(impl, seed, L_q, L_k, d, dead):
    """The same for scaled_dot_product_attention_backward: finite everywhere, exactly 0 where nothing is seen."""
    mask = random_mask(seed, (2, L_q, L_k), 0.7, dead_rows=dead)
    dead_rows = ~mask.any(axis=-1)
    q, k, v = normal(seed, (2, L_q, d)), normal(seed + 1, (2, L_k, d)), normal(seed + 2, (2, L_k, d))
    dout = normal(seed + 3, (2, L_q, d))
    if carried.masking_charged(impl, "attention_weights", alone=True):  # its masked weights fail the masks chapter (charged
        check.oracle(impl, SDPA_BACKWARD, dout, q, k, v, mask=mask)  # there): judged on the weights it goes with
        return
    dq, dk, dv = impl.scaled_dot_product_attention_backward(dout, q, k, v, mask=mask)
    for name, g in (("dq", dq), ("dk", dk), ("dv", dv)):
        check.holds(impl, bool(np.isfinite(g).all()), f"{name} is finite with fully masked rows", arrays=[g])
    check.exactly(impl, dq[dead_rows], np.zeros((int(dead_rows.sum()), d)), "dq is exactly 0 on fully masked rows")
    only_dead = np.where(dead_rows[..., None], dout, 0.0)
    for name, g in zip(("dq", "dk", "dv"), impl.scaled_dot_product_attention_backward(only_dead, q, k, v, mask=mask)):
        check.exactly(impl, g, np.zeros_like(g), f"dout on fully masked rows alone gives {name} exactly 0")


@claim("GRAD-3")
@given(seed=SEEDS, L=st.integers(2, 7), d=st.integers(1, 4), t=st.integers(0, 5))
def test_causal_backward_sends_nothing_back_from_the_future(impl, seed, L, d, t):
    """is_causal: with dout nonzero only at positions <= t, dk and dv at positions > t, and dq at positions > t,
    are exactly 0."""
    t = min(t, L - 2)
    q, k, v = normal(seed, (2, L, d)), normal(seed + 1, (2, L, d)), normal(seed + 2, (2, L, d))
    dout = normal(seed + 3, (2, L, d))
    dout[:, t + 1:] = 0.0
    if carried.masking_charged(impl, "attention_weights", alone=True):  # its causal weights fail the masks chapter (charged
        check.oracle(impl, SDPA_BACKWARD, dout, q, k, v, is_causal=True)  # there): judged on the weights it goes with
        return
    dq, dk, dv = impl.scaled_dot_product_attention_backward(dout, q, k, v, is_causal=True)
    zeros = np.zeros((2, L - t - 1, d))
    check.exactly(impl, dk[:, t + 1:], zeros, f"outputs 0..{t} send no gradient to keys after position {t}")
    check.exactly(impl, dv[:, t + 1:], zeros, f"outputs 0..{t} send no gradient to values after position {t}")
    check.exactly(impl, dq[:, t + 1:], zeros, f"queries after position {t} get no gradient from outputs 0..{t}")


@claim("GRAD-3")
@given(case=mha_cases(self_attention=True, masked=False, causal=True, max_heads=3), t=st.integers(0, 8))
def test_causal_multi_head_attention_has_no_gradient_from_the_future(impl, case, t):
    """Causal self-attention through the projections: d out[:, :t+1] / d x[:, j] is exactly 0 for j > t."""
    _torch(impl)
    L = case.L_q
    if L < 2:
        not_applicable("one token has no future")
    t = min(t, L - 2)
    weights = impl.native(case.weights)

    def run(x):
        return impl.call_native("multi_head_attention", x, x, x, weights, case.num_heads, is_causal=True)

    first = np.zeros((case.B, L, case.D), dtype=bool)
    first[:, : t + 1] = True  # the outputs at positions 0..t
    (g,), _ = _autograd(impl, run, [case.query], first)
    check.exactly(impl, g[:, t + 1:], np.zeros_like(g[:, t + 1:]),
                  f"the gradient of outputs 0..{t} with respect to tokens after {t} is exactly 0")
