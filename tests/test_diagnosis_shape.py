"""What a failure looks like, in words (spec_tests/harness/failure_shape.py): the line a learner reads when
no known bug is named. Each kind of failure is recognised for what it is, and none is claimed for
arrays that do not show it."""

import numpy as np

from spec_tests.harness.failure_shape import looks_like

RNG = np.random.default_rng(7)
E = RNG.standard_normal((2, 3, 4))


def test_a_constant_factor_is_given_with_its_ratio():
    assert "every value is 0.5 times the expected one" in looks_like(E, 0.5 * E, "float64")


def test_rows_in_the_wrong_order():
    assert "the right rows in the wrong order" in looks_like(E, E[:, ::-1], "float64")


def test_a_transpose():
    square = RNG.standard_normal((3, 3))
    assert "transposed" in looks_like(square, square.T, "float64")


def test_nan_is_counted_and_located():
    seen = E.copy()
    seen[1, 2, 0] = np.nan
    assert looks_like(E, seen, "float64").startswith("1 NaN value(s) where the reference is finite, in row 5 of 6")


def test_all_zero():
    assert looks_like(E, np.zeros_like(E), "float64") == "every value seen is 0"


def test_which_rows_and_columns_are_wrong():
    seen = E.copy()
    seen[0, 1, 2] += 1.0
    text = looks_like(E, seen, "float64")
    assert "wrong values in row 1 of 6" in text and "only in column 2 of 4" in text, text
    assert "factor" not in text and "wrong places" not in text


def test_weights_that_leak_onto_hidden_keys_still_summing_to_one():
    expected = np.array([[1.0, 0.0], [0.5, 0.5]])
    seen = np.array([[0.5, 0.5], [0.5, 0.5]])
    text = looks_like(expected, seen, "float64", "attention_weights")
    assert "still sum to 1" in text and "weight on 1 key(s) the reference gives exactly 0, in row 0 of 2" in text


def test_weights_that_do_not_sum_to_one():
    expected = np.array([[0.25, 0.75]])
    assert "do not sum to 1" in looks_like(expected, expected / 2, "float64", "attention_weights")


def test_nothing_to_say_within_tolerance_or_for_other_shapes():
    assert looks_like(E, E + 1e-15, "float64") is None
    assert looks_like(E, E[0], "float64") is None
