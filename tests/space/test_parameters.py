"""Integer and Categorical parameters: values, labels and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from treebo import Categorical, Choice, ConfigurationError, Integer


def test_integer_checks_values_and_returns_ints():
    n = Integer("n", 1, 10)
    assert n.check(3) == 3 and isinstance(n.check(np.int64(4)), int)
    assert n.check(5.0) == 5 and isinstance(n.check(5.0), int)
    for bad, match in [
        (3.5, "must be an integer"),
        (True, "must be an integer"),
        ("3", "must be an integer"),
        (11, "outside"),
        (float("nan"), "must be an integer"),
    ]:
        with pytest.raises(ConfigurationError, match=f"'n'.*{match}"):
            n.check(bad)
    assert Integer("m", 1, 1000, log_scale=True).model_bounds == (0.0, 3.0)


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: Integer("n", 0.5, 3), "low must be an integer"),
        (lambda: Integer("n", 3, 3), "low < high"),
        (lambda: Integer("n", 0, 9, log_scale=True), "low >= 1"),
        (lambda: Integer("n", 1, 9, log_scale=1), "log_scale must be a bool"),
        (lambda: Integer("", 1, 9), "non-empty string"),
        (lambda: Categorical("c", "ab"), "values must be a list"),
        (lambda: Categorical("c", []), "at least one label"),
        (lambda: Categorical("c", [0, False]), "equal as dict keys"),
        (lambda: Categorical("c", [[1], [2]]), "not hashable"),
        (lambda: Categorical("c", ["a"], ordered="yes"), "ordered must be a bool"),
    ],
)
def test_bad_definitions_name_the_parameter(build, match):
    with pytest.raises((TypeError, ValueError), match=match):
        build()


def test_categorical_matches_labels_like_a_choice():
    c = Categorical("c", [1, "two", (3, 4)])
    assert c.match(1.0) == 1 and c.match(np.int64(1)) == 1
    assert c.match((3, 4)) == (3, 4)
    with pytest.raises(ConfigurationError, match="categorical 'c'"):
        c.match("three")
    with pytest.raises(ConfigurationError, match="categorical 'c'"):
        c.match([1])
    assert not Choice("flag", [True, False]).selects_subtree
