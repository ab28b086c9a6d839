r"""Far-out scores: observations of a bad region, or outliers to leave out.

The loop raises scores far below the others to Tukey's outer fence before any model sees
them ([`raise_far_out()`][treebo.loop.outcomes.raise_far_out]): the model learns that
the configuration is bad without the spread of the good scores collapsing. Where a bad
region produced the score, that is right. Where an evaluation diverged at a good
configuration, it is wrong, and it teaches the model that the parameters the
configuration shares with its neighbours are bad (on P1(a), one diverged evaluation
among the first 30 keeps 3 runs of 10 on a worse branch).

[`screen_far_out()`][treebo.strategies.far_out.screen_far_out] lets the evidence decide
([`outlier_log_odds()`][treebo.gp.evidence.outlier_log_odds]): it fits the model with
and without the scores at the fence, and where they are better explained as outliers,
leaves them out and makes their configurations pending (believed at the model's
prediction, as Ax treats arms without usable data), so that they are not proposed again.

Example:
    >>> import torch
    >>> y = torch.tensor([[0.3], [0.1], [-0.2], [0.4], [0.0], [-9.0]])
    >>> far_out_rows(y, torch.zeros(6, dtype=torch.bool)).tolist()
    [False, False, False, False, False, True]
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import torch
from botorch.exceptions import ModelFittingError
from botorch.models import SingleTaskGP
from torch import Tensor

from treebo.gp.evidence import outlier_log_odds
from treebo.strategies.base import Observations

#: Scores more than this many interquartile ranges below the first quartile
#: (Tukey's "far out" fence) are far out.
FAR_OUT = 3.0


def lower_fence(scores: Tensor) -> tuple[Tensor, Tensor] | None:
    r"""Tukey's outer fence on the bad side of ``n`` finite scores to maximize,
    $L = q_1 - 3 (q_3 - q_1)$, and the spread $q_3 - q_1$; ``None`` with fewer than 4
    scores or $q_1 = q_3$ (half the scores tied).

    Example:
        >>> lower_fence(torch.tensor([1.0, 2.0, 3.0, 4.0, -1e300]))
        (tensor(-5.), tensor(2.))
    """
    if scores.numel() < 4:
        return None
    q1, q3 = torch.quantile(scores, scores.new_tensor([0.25, 0.75])).unbind()
    spread = q3 - q1
    if not bool(spread.isfinite() & (spread > 0)):
        return None
    return q1 - FAR_OUT * spread, spread


def far_out_rows(y: Tensor, failed: Tensor) -> Tensor:
    r"""``n`` booleans: the successful scores at or below Tukey's outer fence
    ([`lower_fence()`][treebo.strategies.far_out.lower_fence]) of the successful
    scores.

    The loop has raised far-out scores to the fence already; raising keeps the
    quartiles, so the fence is found again (to round-off). With fewer than 4 successes
    or $q_1 = q_3$ nothing is far out.

    Args:
        y: ``n x 1`` scores to maximize.
        failed: ``n`` booleans, true for failed trials.
    """
    z, ok = y.squeeze(-1), ~failed
    fence = lower_fence(z[ok])
    if fence is None:
        return torch.zeros_like(ok)
    return ok & (z <= fence[0] + 1e-9 * fence[1])


def leave_out(
    observations: Observations, rows: Tensor
) -> tuple[Observations, float, float]:
    """The observations without ``rows``, re-standardized, and the shift ``a`` and
    scale ``b`` of the new scores ``z = (y - a) / b``. Failed trials keep the worst
    score; known noise variances are rescaled with the scores.

    Args:
        observations: What the strategy was given.
        rows: ``n`` booleans, the rows to leave out (not all successes).
    """
    keep = ~rows
    y, failed = observations.y[keep], observations.failed[keep]
    good = y[~failed]
    shift = float(good.mean())
    scale = float(good.std().clamp_min(1e-12)) if good.numel() > 1 else 1.0
    z = (y - shift) / scale
    z = torch.where(failed.unsqueeze(-1), z[~failed].min(), z)
    yvar, kept = observations.yvar, keep.tolist()
    reduced = dataclasses.replace(
        observations,
        X=observations.X[keep],
        y=z,
        failed=failed,
        kinds=tuple(k for k, b in zip(observations.kinds, kept, strict=True) if b),
        yvar=None if yvar is None else yvar[keep] / scale**2,
    )
    return reduced, shift, scale


class FitsModel(Protocol):
    """A strategy whose proposals come from one GP fitted to the observations."""

    def fit(self, observations: Observations) -> SingleTaskGP:
        """Fit the strategy's model to ``observations`` (warm-started from the
        strategy's state, which the fit updates)."""
        ...

    def scratch_copy(self) -> FitsModel:
        """A deep copy that fits without changing the strategy."""
        ...


def screen_far_out(
    observations: Observations, strategy: FitsModel
) -> tuple[Observations, SingleTaskGP | None]:
    """The observations to propose from and ``strategy``'s model fitted to them.

    Without far-out scores nothing is fitted (the model is ``None``). Otherwise a copy
    of the strategy fits the other rows and the strategy all rows, each warm-started
    from the strategy's state; where the log odds of "outliers"
    ([`outlier_log_odds()`][treebo.gp.evidence.outlier_log_odds]) are positive, the
    far-out rows leave the observations, their configurations join the pending ones,
    and the strategy takes the copy's state.

    Args:
        observations: What the strategy was given.
        strategy: The strategy (e.g.
            [`AddTreeStrategy`][treebo.add_tree.strategy.AddTreeStrategy]).
    """
    rows = far_out_rows(observations.y, observations.failed)
    if not bool(rows.any()):
        return observations, None
    reduced, shift, scale = leave_out(observations, rows)
    apart = strategy.scratch_copy()
    try:
        inliers = apart.fit(reduced)
    except (ModelFittingError, RuntimeError, ValueError):  # keep what fits
        return observations, strategy.fit(observations)
    observed = strategy.fit(observations)
    X_far = observations.X[rows]
    y_far = (observations.y[rows].squeeze(-1) - shift) / scale
    if outlier_log_odds(observed, inliers, X_far, y_far, scale) <= 0:
        return observations, observed
    vars(strategy).update(vars(apart))
    pending = torch.cat([observations.X_pending, X_far])
    return dataclasses.replace(reduced, X_pending=pending), inliers
