"""Add-Tree BO with scores scaled by the spread of their distinct values.

The loop standardizes scores by their mean and standard deviation. When most
scores tie (a plateau of majority-class accuracies on HPO-B), that deviation
is tiny and a score slightly below the plateau becomes a dip of many
standard units, which the GP fits with a short lengthscale. Here the scores
are centred and scaled by the mean and standard deviation of their distinct
values instead: a tie counts once. An experiment, not a package option.

Example:
    >>> import torch
    >>> y = torch.tensor([[1.0], [1.0], [1.0], [0.0]], dtype=torch.float64)
    >>> distinct_scale(y).squeeze(-1).tolist()
    [0.7071067811865476, 0.7071067811865476, 0.7071067811865476, -0.7071067811865476]
"""

from __future__ import annotations

from dataclasses import replace

import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor

from treebo.add_tree import AddTreeStrategy
from treebo.strategies.base import Observations, Proposal


def distinct_scale(y: Tensor) -> Tensor:
    """``y`` (``n x 1``) centred and scaled by its distinct values' mean and
    standard deviation (unchanged where fewer than two values differ)."""
    distinct = torch.unique(y)
    if distinct.numel() < 2:
        return y
    return (y - distinct.mean()) / distinct.std()


class TieScale(AddTreeStrategy):
    """The Add-Tree loop on scores scaled by :func:`distinct_scale`."""

    name = "add_tree_tie_scale"

    def _rescaled(self, observations: Observations) -> Observations:
        return replace(observations, y=distinct_scale(observations.y))

    def propose(self, observations: Observations) -> Proposal:
        return super().propose(self._rescaled(observations))

    def acquisition(self, observations: Observations) -> AcquisitionFunction:
        return super().acquisition(self._rescaled(observations))
