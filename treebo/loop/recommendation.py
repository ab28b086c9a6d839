r"""The recommended configuration of a run: the best guess, not the luckiest draw.

Under noise the best observed value is biased upwards (the maximum of noisy draws), and
its configuration need not be the best one evaluated. As BoTorch and Ax recommend, the
recommendation is then the evaluated configuration of best posterior mean,
$i^\star = \arg\max_{i : \text{ok}} \mu(x_i)$, reported with $\mu(x_i^\star)$ and the
posterior standard deviation $\sigma(x_i^\star)$ of its true value, in the objective's
units (as Ax reports mean ± SEM). A strategy without a predictive model, or one whose
model interpolates (a deterministic objective), returns no prediction and the best
observation stands.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import torch
from botorch.exceptions import ModelFittingError
from torch import Tensor

from treebo.loop.outcomes import score_scale
from treebo.strategies.base import Observations, Strategy


class Recommendation(NamedTuple):
    """The model's pick among the evaluated configurations.

    Attributes:
        index: The trial's index.
        score: Its posterior mean, in the units of the scores.
        sd: The posterior standard deviation of its true score, in those units.
    """

    index: int
    score: float
    sd: float


def recommend(
    strategy: Strategy, observations: Observations, scores: Tensor
) -> Recommendation | None:
    """The evaluated configuration the model predicts best, or ``None`` where the best
    observation is the recommendation.

    Args:
        strategy: The run's strategy
            ([`Strategy.predict()`][treebo.strategies.base.Strategy.predict]).
        observations: What the strategy sees (``y`` standardized ``scores``).
        scores: ``n`` scores to maximize (NaN for failed trials), unstandardized.

    Returns:
        A [`Recommendation`][treebo.loop.recommendation.Recommendation]; ``None``
        also when the model fails to fit (with a warning).

    Example:
        >>> import torch
        >>> from treebo.strategies import Prediction
        >>> class Fixed:
        ...     def predict(self, observations):
        ...         mean, variance = torch.tensor([0.0, 1.0]), torch.tensor([1.0, 4.0])
        ...         return Prediction(mean, variance)
        >>> class Seen:
        ...     failed = torch.tensor([False, False])
        >>> pick = recommend(Fixed(), Seen(), torch.tensor([10.0, 12.0]))
        >>> pick.index, round(pick.score, 3), round(pick.sd, 3)  # mean 11, sd sqrt(2)
        (1, 12.414, 2.828)
    """
    try:
        predicted = strategy.predict(observations)
    except (ModelFittingError, RuntimeError) as err:
        warnings.warn(
            f"treebo: the model failed ({err}); recommending the best observed "
            "configuration.",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    if predicted is None:
        return None
    mean = predicted.mean.detach().cpu().to(torch.float64).reshape(-1)
    mean = mean.masked_fill(observations.failed.cpu(), -torch.inf)
    index = int(mean.argmax())
    scale = score_scale(scores)
    variance = float(predicted.variance.detach().reshape(-1)[index].clamp_min(0.0))
    return Recommendation(
        index,
        float(scale.unstandardize(mean[index])),
        variance**0.5 * scale.peak * scale.spread,
    )
