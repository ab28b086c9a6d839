"""Checks of option values shared by the strategies' options objects."""

from __future__ import annotations

import math


def check_positive(value: float, name: str) -> None:
    """Raise a ``ValueError`` naming ``name`` unless ``value`` is finite and > 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value > 0)
    ):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")


def check_count(value: int, name: str, minimum: int) -> None:
    """Raise a ``ValueError`` naming ``name`` unless ``value`` is an int >= minimum."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
