import math

import pytest

from treebo.strategies.validation import check_count, check_positive


@pytest.mark.parametrize("value", [0.0, -1.0, math.inf, math.nan, True, "1"])
def test_check_positive_refuses_naming_the_option(value):
    with pytest.raises(ValueError, match="noise_floor must be a finite number > 0"):
        check_positive(value, "noise_floor")


@pytest.mark.parametrize("value", [0, 1.5, True, "3"])
def test_check_count_refuses_naming_the_option(value):
    with pytest.raises(ValueError, match="num_restarts must be an integer >= 1"):
        check_count(value, "num_restarts", 1)


def test_valid_values_pass_and_the_minimum_is_the_boundary():
    # Each call returns (None) instead of raising.
    assert check_positive(1e-9, "x") is None
    assert check_positive(3, "x") is None
    assert check_count(0, "x", 0) == 0
    with pytest.raises(ValueError, match="x must be an integer >= 1"):
        check_count(0, "x", 1)


def test_check_count_takes_numpy_integers_and_an_upper_bound():
    import numpy as np

    value = check_count(np.int64(7), "seed", 0, 2**32)
    assert value == 7 and type(value) is int
    with pytest.raises(
        ValueError, match=r"seed must be an integer >= 0 and < 4294967296"
    ):
        check_count(2**62, "seed", 0, 2**32)
