"""Scores through a Yeo-Johnson power transform before the model sees them.

HEBO (the 2020 black-box optimization challenge's winner) fits its GP to
power-transformed outcomes. On an error rate where a few configurations predict the
majority class (0.6 against 0.01-0.05 for the rest), standardized scores put the good
configurations within a tenth of a standard deviation of each other: the model
resolves "works or not" and little else. A Yeo-Johnson transform with its
maximum-likelihood exponent makes the scores as close to normal as one exponent can,
which stretches the crowded good end and compresses the far tail.

``treebo_yj`` is the default loop whose strategy sees the transformed (and
re-standardized) scores; the transform is monotone, so the incumbent and every
ordering stay. The exponent is refitted at every proposal (``n`` scores, a scalar
search). Experiment only (docs/design.md).

Example:
    >>> import torch
    >>> y = torch.tensor([[0.1], [0.0], [-0.2], [-9.0], [0.05]], dtype=torch.float64)
    >>> z = yeo_johnson_scores(y)
    >>> bool((z.argsort(0) == y.argsort(0)).all())
    True
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from scipy import stats
from torch import Tensor

from treebo.add_tree import AddTreeStrategy
from treebo.strategies.base import Observations, Proposal

from .treebo import PRESETS, register_preset


def yeo_johnson_scores(y: Tensor) -> Tensor:
    """``n x 1`` scores through Yeo-Johnson at the maximum-likelihood exponent,
    standardized again (unchanged where fewer than three scores differ)."""
    values = y.detach().cpu().numpy()[:, 0].astype(np.float64)
    if np.unique(values).size < 3:
        return y
    centred = (values - values.mean()) / values.std()
    warped, _ = stats.yeojohnson(centred)
    warped = (warped - warped.mean()) / max(warped.std(), 1e-12)
    return torch.as_tensor(warped, dtype=y.dtype, device=y.device).unsqueeze(-1)


class YeoJohnsonScores(AddTreeStrategy):
    """The default Add-Tree loop on Yeo-Johnson-transformed scores."""

    def propose(self, observations: Observations) -> Proposal:
        if observations.yvar is not None:  # known noise: variances would not map
            return super().propose(observations)
        warped = dataclasses.replace(observations, y=yeo_johnson_scores(observations.y))
        return super().propose(warped)


if "treebo_yj" not in PRESETS:
    register_preset("treebo_yj", YeoJohnsonScores)
