"""Checks of option values shared by the strategies' options objects."""

from __future__ import annotations

import math
import numbers

from treebo.space import ConfigurationError


def check_positive(value: float, name: str) -> None:
    """Raise a ``ValueError`` naming ``name`` unless ``value`` is finite and > 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value > 0)
    ):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")


def check_count(value: int, name: str, minimum: int, maximum: int | None = None) -> int:
    """``value`` as an ``int`` (NumPy's integers are integers too).

    Raises:
        ConfigurationError: Naming ``name`` unless ``value`` is an integer (not a
            bool) of at least ``minimum`` and below ``maximum``.

    Example:
        >>> import numpy as np
        >>> check_count(np.int64(3), "budget", 1)
        3
    """
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not ok or value < minimum or (maximum is not None and value >= maximum):
        upper = "" if maximum is None else f" and < {maximum}"
        raise ConfigurationError(
            f"{name} must be an integer >= {minimum}{upper}, got {value!r}."
        )
    return int(value)
