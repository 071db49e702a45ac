"""Chapter: positional encodings (docs/positional.md). Claims PE-1 .. PE-3 (PE-4, PE-5: later chapters).

    PE[p, 2i] = sin(p / 10000^(2i/D)),   PE[p, 2i+1] = cos(p / 10000^(2i/D))      (seed 001 §5.2)

sin and cos interleave (even columns sin, odd columns cos). Each column pair turns at angular
frequency ω_i = 10000^(-2i/D), so shifting by k positions is a rotation by k ω_i in every pair.
The result's precision is whatever the implementation returns (the function has no input array);
it is compared with the float64 oracle under the rule for that precision, with the size of the
angles (up to `length`) as the size of the values involved.
"""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import reference
from spec_tests.harness import check, tolerance
from spec_tests.harness.arrays import KNOWN_FLOATS

claim = pytest.mark.claim
PE = "sinusoidal_positional_encoding"
EVEN_D = st.integers(1, 64).map(lambda n: 2 * n)


def _pe(impl, length: int, d_model: int) -> tuple[np.ndarray, str]:
    """The encoding as float64, and the precision the implementation returned it in."""
    pe = impl.sinusoidal_positional_encoding(length, d_model)
    seen = impl.history[-1].seen_dtype
    return pe, seen if seen in KNOWN_FLOATS else "float64"


# ---------------------------------------------------------------------------------- PE-1
@claim("PE-1")
@given(length=st.integers(1, 300), d_model=EVEN_D)
@example(length=50, d_model=512)
def test_sinusoidal_values_follow_the_formula(impl, length, d_model):
    """Every value equals sin/cos(p / 10000^(2i/D)), sin in even columns, cos in odd ones."""
    pe, dtype = _pe(impl, length, d_model)
    expected = reference.sinusoidal_positional_encoding(length, d_model)
    check.compare(impl, pe, expected, tolerance.oracle_bound(dtype, expected, scale=float(length)),
                  f"sinusoidal_positional_encoding({length}, {d_model}) against the formula "
                  f"(in the {dtype} it returned)")


@claim("PE-1")
@given(d_model=EVEN_D)
def test_position_zero_is_zero_one_zero_one(impl, d_model):
    """pe[0] = [sin 0, cos 0, sin 0, cos 0, ...] = [0, 1, 0, 1, ...] exactly."""
    pe, _ = _pe(impl, 3, d_model)
    check.exactly(impl, pe[0], np.tile([0.0, 1.0], d_model // 2), "pe[0] == [0, 1, 0, 1, ...]")


@claim("PE-1")
@given(length=st.integers(1, 64), d_model=EVEN_D)
def test_output_shape_is_length_by_d_model(impl, length, d_model):
    pe, _ = _pe(impl, length, d_model)
    check.shape(impl, pe, (length, d_model), "sinusoidal_positional_encoding(length, d_model) is (length, d_model)")


# ---------------------------------------------------------------------------------- PE-2
@claim("PE-2")
@given(length=st.integers(1, 400), d_model=EVEN_D)
def test_values_lie_in_minus_one_to_one(impl, length, d_model):
    pe, _ = _pe(impl, length, d_model)
    check.holds(impl, bool((np.abs(pe) <= 1.0).all()), "every value lies in [-1, 1]",
                [f"largest |value| seen {np.abs(pe).max()!r}"], [pe])


@claim("PE-2")
@pytest.mark.parametrize("length, d_model", [(512, 64), (2048, 16), (1024, 128)])
def test_no_two_positions_share_an_encoding(impl, length, d_model):
    """Within a practical range, distinct positions have distinct encodings (distance > 0.5)."""
    pe, _ = _pe(impl, length, d_model)
    sq = (pe**2).sum(axis=1)
    dist2 = sq[:, None] + sq[None, :] - 2.0 * pe @ pe.T  # (length, length) squared distances
    np.fill_diagonal(dist2, np.inf)
    closest = float(np.sqrt(max(dist2.min(), 0.0)))
    i, j = np.unravel_index(int(np.argmin(dist2)), dist2.shape)
    check.holds(impl, closest > 0.5, f"every pair of the {length} positions is more than 0.5 apart",
                [f"positions {i} and {j} are only {closest:.3g} apart"], [pe])


# ---------------------------------------------------------------------------------- PE-3
@claim("PE-3")
@given(length=st.integers(2, 200), d_model=EVEN_D, k=st.integers(1, 50))
def test_shifting_by_k_is_a_fixed_rotation(impl, length, d_model, k):
    """pe[p + k] = R_k pe[p] for every p, with R_k block-diagonal: pair i rotated by the angle that takes pe[0] to pe[k]."""
    pe, dtype = _pe(impl, length + k, d_model)
    s0, c0 = pe[k, 0::2], pe[k, 1::2]  # (sin kω_i, cos kω_i), read off the encoding itself since pe[0] = (0, 1)
    sin_p, cos_p = pe[:length, 0::2], pe[:length, 1::2]
    rotated = np.empty((length, d_model))
    rotated[:, 0::2] = sin_p * c0 + cos_p * s0  # sin(a + b) = sin a cos b + cos a sin b
    rotated[:, 1::2] = cos_p * c0 - sin_p * s0  # cos(a + b) = cos a cos b - sin a sin b
    bound = tolerance.relation_bound(dtype, float(length + k))
    check.compare(impl, pe[k:k + length], rotated, bound,
                  f"pe[p + {k}] is pe[p] rotated pairwise by the angles of pe[{k}], the same for every p")
