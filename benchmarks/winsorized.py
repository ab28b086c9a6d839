r"""Experiment: the Add-Tree loop on scores with the bad tail clipped.

CV errors, training losses and the like are heavy-tailed: a classifier that
predicts one class scores 0.37 among errors of 0.02-0.07, and after
standardization those few points set the scale, so that the GP sees the good
region as flat. Ax's default models clip the objective at Tukey's fence
before fitting. ``add_tree_winsorized`` (benchmark modifier ``wins``) is the
default loop with the same clipping of the scores before any model sees them.
It is an experiment (RESULTS: "Clipped scores on P9"), not a loop option.

Example:
    >>> import torch
    >>> y = torch.tensor([1.0, 2.0, 3.0, 4.0, -100.0], dtype=torch.float64)
    >>> w = winsorize_scores(y)
    >>> bool(w[4] == w.min()), round(float((w[1] - w[0]) / (w[3] - w[0])), 6)
    (True, 0.333333)
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch
from torch import Tensor

from treebo.add_tree.strategy import AddTreeStrategy
from treebo.loop.outcomes import standardize_scores
from treebo.strategies.base import Observations, Proposal, register_strategy

#: Tukey's fence: scores below ``Q1 - TUKEY_FENCE * (Q3 - Q1)`` are outliers.
TUKEY_FENCE = 1.5


def winsorize_scores(scores: Tensor, fence: float = TUKEY_FENCE) -> Tensor:
    r"""Scores to maximize, clipped below Tukey's lower fence and standardized.

    With :math:`Q_1, Q_3` the lower and upper quartiles taken at observed
    scores (the lower and the higher order statistic), scores below
    :math:`Q_1 - c\,(Q_3 - Q_1)` are raised to it and the result is
    standardized (:func:`~treebo.loop.outcomes.standardize_scores`). The map is
    equivariant under :math:`a f + b` (:math:`a > 0`); scores with nothing
    below the fence, or fewer than four, come back unchanged.

    Args:
        scores: ``n`` or ``n x 1`` finite scores to maximize.
        fence: The fence's multiple of the interquartile range, ``> 0``.

    Returns:
        The clipped, standardized scores, shaped like ``scores``.
    """
    if not (math.isfinite(fence) and fence > 0):
        raise ValueError(f"fence must be a finite number > 0, got {fence!r}.")
    flat = scores.reshape(-1)
    if flat.numel() < 4:
        return scores
    q1 = torch.quantile(flat, 0.25, interpolation="lower")
    q3 = torch.quantile(flat, 0.75, interpolation="higher")
    lower = q1 - fence * (q3 - q1)
    if not bool((flat < lower).any()):
        return scores
    return standardize_scores(flat.clamp_min(lower)).reshape(scores.shape)


@register_strategy
class WinsorizedAddTreeStrategy(AddTreeStrategy):
    """The ``add_tree`` strategy on winsorized scores."""

    name = "add_tree_winsorized"

    def propose(self, observations: Observations) -> Proposal:
        y = winsorize_scores(observations.y)
        return super().propose(replace(observations, y=y))
