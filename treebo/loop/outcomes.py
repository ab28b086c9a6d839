r"""What the loop accepts as an objective value, and the scores it models.

:func:`parse_outcome` turns whatever an objective returned into a finite float
or a failure with its reason. :func:`standardize_scores` maps the successful
values to zero mean and unit variance before any model sees them, so that the
loop makes the same proposals for :math:`c f + b` as for :math:`f` (any
:math:`c > 0`, up to round-off), however small or large the values' spread.

Example:
    >>> parse_outcome(0.5)
    (0.5, None)
    >>> parse_outcome("0.5")
    (None, "objective returned '0.5' (type str), not a real number")
    >>> import torch
    >>> y = torch.tensor([3e-9, 1e-9, float("nan")], dtype=torch.float64)
    >>> standardize_scores(y).round(decimals=6).tolist()  # failure: the worst
    [0.707107, -0.707107, -0.707107]
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from treebo.space.parameters import as_real_number


def parse_outcome(value: Any) -> tuple[float | None, str | None]:
    """``(value, None)`` for a finite real number, ``(None, reason)`` otherwise.

    Real numbers are Python and NumPy ints and floats and one-element tensors
    or arrays of a real dtype. Strings, booleans, complex numbers, ``None``,
    NaN, infinities and exceptions (a failed evaluation) are failures.

    Args:
        value: What the objective returned (or raised).

    Returns:
        The value as a float and ``None``, or ``None`` and why it was refused.
    """
    if isinstance(value, BaseException):
        return None, f"{type(value).__name__}: {value}"
    if value is None:
        return None, "objective returned None"
    try:
        value = as_real_number(value)
    except TypeError as err:
        return None, f"objective returned {err}, not a real number"
    if not math.isfinite(value):
        return None, f"objective returned {value}"
    return value, None


def standardize_scores(scores: Tensor) -> Tensor:
    r"""Successful scores at zero mean and unit variance; failures at the worst.

    With :math:`s_i` the successful scores, :math:`a = \max_i |s_i|` and
    :math:`z_i = s_i / a`, returns :math:`(z_i - \bar z) / \mathrm{sd}(z)`
    (unbiased standard deviation), which equals :math:`(s_i - \bar s) /
    \mathrm{sd}(s)` but neither overflows for values near the float64
    limit nor underflows for spreads near its resolution. A spread of zero,
    or a single success, keeps the unit scale. Failed entries (NaN) get the
    lowest standardized score.

    Args:
        scores: ``n`` scores, NaN for failed evaluations.

    Returns:
        ``n`` standardized scores (all zero if nothing succeeded).
    """
    ok = ~scores.isnan()
    if not bool(ok.any()):
        return torch.zeros_like(scores)
    good = scores[ok]
    peak = good.abs().max()
    z = good / peak if bool(peak > 0) else good
    z = z - z.mean()
    spread = z.std() if z.numel() > 1 else z.new_zeros(())
    if bool(spread > 0):
        z = z / spread
    out = torch.full_like(scores, math.nan)
    out[ok] = z
    return torch.where(ok, out, z.min())
