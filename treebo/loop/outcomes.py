r"""What the loop accepts as an objective value, and the scores it models.

[`parse_outcome()`][treebo.loop.outcomes.parse_outcome] turns whatever an objective
returned into a finite float or a failure with its reason.
[`standardize_scores()`][treebo.loop.outcomes.standardize_scores] maps the successful
values to zero mean and unit variance before any model sees them, so that the loop makes
the same proposals for $c f + b$ as for $f$ (any $c > 0$, up to round-off), however
small or large the values' spread. Before that,
[`raise_far_out()`][treebo.loop.outcomes.raise_far_out] lifts scores far below the bulk
(a training run that diverged, a simulator that blew up) to the bulk's lower fence: the
model has to resolve the good scores, and one value of ``-1e300`` would otherwise leave
all the others at the same standardized number.

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from treebo.space.parameters import as_real_number
from treebo.strategies.far_out import lower_fence


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


def raise_far_out(scores: Tensor) -> Tensor:
    r"""Scores to maximize with the far-out low ones raised to the lower fence.

    With quartiles $q_1, q_3$ of ``scores``, the fence is $L = q_1 - 3 (q_3 - q_1)$ and
    the result is $\max(s_i, L)$. Only the bad tail is touched: how bad a diverged
    evaluation was says nothing about where the optimum is, while the spread of the good
    scores is what the model must resolve. The fence moves with $c s + b$ ($c > 0$), so
    the result does too. With $q_1 = q_3$ (half the scores tied) nothing is raised.
    A strategy may then leave raised scores out of its model where the evidence calls
    them outliers
    ([`screen_far_out()`][treebo.add_tree.outliers.screen_far_out]).

    Args:
        scores: ``n`` finite scores.

    Returns:
        ``n`` scores, none below the fence.

    Example:
        >>> import torch
        >>> s = torch.tensor([1.0, 2.0, 3.0, 4.0, -1e300], dtype=torch.float64)
        >>> raise_far_out(s).tolist()
        [1.0, 2.0, 3.0, 4.0, -5.0]
    """
    fence = lower_fence(scores)
    return scores if fence is None else scores.clamp_min(fence[0])


@dataclass(frozen=True)
class ScoreScale:
    r"""The affine map of
    [`standardize_scores()`][treebo.loop.outcomes.standardize_scores]:
    $z = (s / a - c) / d$, with $a$ the largest absolute successful score, $c$ the mean
    and $d$ the standard deviation of the (fenced) $s / a$.

    Attributes:
        peak: $a$ (1 where every score is 0).
        center: $c$.
        spread: $d$ (1 where the scores do not spread).

    Example:
        >>> import torch
        >>> scale = score_scale(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
        >>> float(scale.unstandardize(torch.tensor(1.0)))
        3.0
    """

    peak: float
    center: float
    spread: float

    def unstandardize(self, z: Tensor) -> Tensor:
        """Scores of standardized scores ``z``."""
        return (z * self.spread + self.center) * self.peak

    def standardize_variance(self, variance: Tensor) -> Tensor:
        """Variances of scores as variances of standardized scores."""
        return (variance.sqrt() / self.peak / self.spread).square()


def score_scale(scores: Tensor) -> ScoreScale:
    """The [`ScoreScale`][treebo.loop.outcomes.ScoreScale] of ``scores`` (``n``, NaN
    for failed evaluations)."""
    good = scores[~scores.isnan()]
    if not good.numel():
        return ScoreScale(1.0, 0.0, 1.0)
    good = raise_far_out(good)
    peak = float(good.abs().max())
    peak = peak if peak > 0 else 1.0
    z = good / peak
    center = float(z.mean())
    spread = float(z.std()) if z.numel() > 1 else 0.0
    return ScoreScale(peak, center, spread if spread > 0 else 1.0)


def standardize_scores(scores: Tensor) -> Tensor:
    r"""Successful scores at zero mean and unit variance; failures at the worst.

    The successful scores first pass
    [`raise_far_out()`][treebo.loop.outcomes.raise_far_out]. With $s_i$ those scores,
    $a = \max_i |s_i|$ and $z_i = s_i / a$, returns $(z_i - \bar z) / \mathrm{sd}(z)$
    (unbiased standard deviation; [`score_scale()`][treebo.loop.outcomes.score_scale]),
    which equals $(s_i - \bar s) / \mathrm{sd}(s)$ but neither overflows for values
    near the float64 limit nor underflows for spreads near its resolution. A spread of
    zero, or a single success, keeps the unit scale. Failed entries (NaN) get the
    lowest standardized score.

    Args:
        scores: ``n`` scores, NaN for failed evaluations.

    Returns:
        ``n`` standardized scores (all zero if nothing succeeded).
    """
    ok = ~scores.isnan()
    if not bool(ok.any()):
        return torch.zeros_like(scores)
    scale = score_scale(scores)
    z = (raise_far_out(scores[ok]) / scale.peak - scale.center) / scale.spread
    out = torch.full_like(scores, math.nan)
    out[ok] = z
    return torch.where(ok, out, z.min())


def standardized_noise(
    scores: Tensor, noise: float, sems: Sequence[float | None]
) -> Tensor:
    r"""Known noise variances on the scale of
    [`standardize_scores()`][treebo.loop.outcomes.standardize_scores]\ ``(scores)``.

    Args:
        scores: ``n`` scores (NaN for failed trials).
        noise: The run's noise variance, for trials without a standard error.
        sems: ``n`` standard errors told with the values, ``None`` where none was.

    Returns:
        ``n x 1`` variances (``sem**2`` or ``noise``, standardized).
    """
    told = torch.tensor(
        [math.nan if s is None else s for s in sems], dtype=torch.float64
    )
    variance = torch.where(told.isnan(), noise, told.square())
    return score_scale(scores).standardize_variance(variance).unsqueeze(-1)
