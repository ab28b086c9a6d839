r"""The recommended configuration of a run: the best guess, not the luckiest draw.

Under noise the best observed value is biased upwards (the maximum of noisy draws), and
its configuration need not be the best one evaluated. As BoTorch and Ax recommend, the
recommendation is then the evaluated configuration of best posterior mean,
$\arg\max_{i : \text{ok}} \mu(x_i)$, reported with $\mu(x_i)$ in the objective's units.
A strategy without a predictive model, or one whose model interpolates (a deterministic
objective), returns no prediction and the best observation stands.
"""

from __future__ import annotations

import warnings

import torch
from botorch.exceptions import ModelFittingError
from torch import Tensor

from treebo.loop.outcomes import score_scale
from treebo.strategies.base import Observations, Strategy


def recommend(
    strategy: Strategy, observations: Observations, scores: Tensor
) -> tuple[int, float] | None:
    """``(trial index, predicted score)`` of the evaluated configuration the model
    predicts best, or ``None`` where the best observation is the recommendation.

    Args:
        strategy: The run's strategy
            ([`Strategy.predict()`][treebo.strategies.base.Strategy.predict]).
        observations: What the strategy sees (``y`` standardized ``scores``).
        scores: ``n`` scores to maximize (NaN for failed trials), unstandardized.

    Returns:
        The index and the posterior mean in the units of ``scores``; ``None`` also
        when the model fails to fit (with a warning).
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
    predicted = predicted.detach().cpu().to(torch.float64).reshape(-1)
    predicted = predicted.masked_fill(observations.failed.cpu(), -torch.inf)
    index = int(predicted.argmax())
    return index, float(score_scale(scores).unstandardize(predicted[index]))
