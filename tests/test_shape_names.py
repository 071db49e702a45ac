"""The check that an error message names a shape accepts every common spelling of it, and only it."""

import pytest

from spec_tests.harness.check import _names, names_shape

SPELLINGS_3_5 = ["got dy of shape (3, 5)", "got (3,5)", "torch.Size([3, 5]) does not match",
                 "shape [3, 5]", "a 3x5 gradient", "a 3 x 5 gradient", "a 3×5 gradient", "dy: (3 ,5 )",
                 "shape (3, 5).", "dy is 3*5"]
NOT_3_5 = ["shape (2, 3, 5)", "shape (3, 5, 7)", "(5, 3)", "(3, 50)", "(13, 5)", "3.5", "(3, 4) and (5, 6)",
           "three by five", ""]


@pytest.mark.parametrize("message", SPELLINGS_3_5)
def test_every_common_spelling_of_a_shape_names_it(message):
    assert names_shape(message, (3, 5))
    assert _names(message, "(3, 5)")  # how a test writes it: names=("(3, 5)",)


@pytest.mark.parametrize("message", NOT_3_5)
def test_other_shapes_and_numbers_do_not(message):
    assert not names_shape(message, (3, 5))
    assert not _names(message, "(3, 5)")


@pytest.mark.parametrize("message, expected", [
    ("positions has shape (5,)", True), ("positions: [5]", True), ("torch.Size([5])", True), ("(5)", True),
    ("positions of length 5", False), ("shape (5, 2)", False), ("(15,)", False),
])
def test_a_one_dimensional_shape_must_be_bracketed(message, expected):
    assert _names(message, "(5,)") is expected


def test_numbers_and_words_keep_their_rules():
    assert _names("num_heads=4 does not divide 6", 4) and not _names("num_heads=14", 4)
    assert _names("D must be divisible by H", "d") and _names("Odd size 5", ("5",))
