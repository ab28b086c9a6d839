r"""Far-out scores screened by the evidence: observations of a bad region, or outliers.

The loop raises scores far below the others to Tukey's outer fence before any model sees
them ([`raise_far_out()`][treebo.loop.outcomes.raise_far_out]). Where a bad region
produced the score, that is right. Where an evaluation diverged at a good configuration,
it teaches the model that the parameters the configuration shares with its neighbours
are bad (on P1(a), one diverged evaluation among the first 30 keeps 3 runs of 10 on a
worse branch). [`screen_far_out()`][treebo.add_tree.outliers.screen_far_out] lets the
evidence decide: it fits the model with and without the scores at the fence, and where
they are better explained as outliers, leaves them out and keeps their configurations
in ``Observations.X_left_out``: the strategy believes them at the model's prediction,
as pending ones (as Ax treats arms without usable data), so that they are not proposed
again.

A score far below the others is either a property of its configuration (a region of the
space that is bad: an unregularized feature map, a learning rate far too small) or an
evaluation that went wrong (a training run that diverged at a good configuration). Which
it is, the data say, by comparing two explanations of the same scores, as the robust GP
of Ament et al. (2024) does (BoTorch's ``RobustRelevancePursuitSingleTaskGP``):

- **observed**: one GP of all $n$ scores, with evidence $\log p(y \mid \hat\theta)$, the
  marginal likelihood at the fitted hyper-parameters (with their log prior, the
  objective of the fit);
- **outliers**: a GP of the other scores, with evidence
  $\log p(y_{\text{in}} \mid \hat\theta_{\text{in}})$, and each of the $k$ far-out
  scores $y_j$ with a noise variance of its own at its maximum-likelihood value given
  the rest: with $\mu_j, s_j^2$ the predictive mean and variance of the inliers' GP at
  $x_j$ and $r_j = y_j - \mu_j$, the variance is $\max(s_j^2, r_j^2)$ and $y_j$ adds
  $\log \mathcal{N}(y_j; \mu_j, \max(s_j^2, r_j^2))$; the support's exponential prior
  with mean $n / 5$ (Ament et al.'s default) adds $-5 k / n$.

The difference of the two is the log odds of "outliers". Scores that agree with each
other are cheaper for the one GP where its model can express them (an Add-Tree GP's
branch offset explains a branch whose every score is low, from about four scores on);
one score far below good neighbours is cheaper as an outlier. One or two far-out scores
in a region that no other score covers are often cheaper as outliers too: the region
may then be visited again, and a second bad score there is evidence for the first.

Example:
    >>> import torch
    >>> from botorch.models import SingleTaskGP
    >>> X = torch.linspace(0, 1, 12, dtype=torch.float64).unsqueeze(-1)
    >>> y = torch.sin(6 * X)
    >>> y[5] = -8.0  # a diverged evaluation amid smooth neighbours
    >>> keep = torch.arange(12) != 5
    >>> observed, inliers = SingleTaskGP(X, y), SingleTaskGP(X[keep], y[keep])
    >>> bool(outlier_log_odds(observed, inliers, X[~keep], y[~keep, 0]) > 0)
    True
"""

from __future__ import annotations

import copy
import dataclasses
import math

import torch
from botorch.exceptions import ModelFittingError
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from treebo.add_tree.fitting import AddTreeFit
from treebo.add_tree.model import AddTreeGP
from treebo.strategies.base import Observations
from treebo.strategies.far_out import far_out_rows

#: The mean of the exponential prior over the number of outliers, as a share of the
#: scores (Ament et al., 2024).
OUTLIER_SHARE = 0.2


@torch.no_grad()
def log_evidence(model: SingleTaskGP) -> Tensor:
    r"""The log marginal likelihood of a GP's training targets plus its
    hyper-parameters' log prior, on the scale of the targets it was given.

    A model's ``Standardize`` maps targets $y$ to $(y - m) / s$; the density of $y$ is
    that of the standardized targets times $s^{-n}$.

    Args:
        model: A single-outcome exact GP (its current hyper-parameters are used).

    Returns:
        A scalar tensor (no gradient).
    """
    n = model.train_targets.shape[-1]
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    try:
        inputs = model.train_inputs[0]
        value = mll(model(inputs), model.train_targets, inputs) * n
    finally:
        model.eval()
    transform = getattr(model, "outcome_transform", None)
    if transform is not None:
        value = value - n * transform.stdvs.log().sum()
    return value


@torch.no_grad()
def outlier_log_odds(
    observed: SingleTaskGP,
    inliers: SingleTaskGP,
    X_far: Tensor,
    y_far: Tensor,
    scale: float = 1.0,
) -> float:
    r"""Log odds that far-out scores are outliers rather than observations.

    Args:
        observed: A GP fitted to all $n$ scores, the far-out ones included.
        inliers: A GP fitted to the others, on a scale $z = (y - a) / b$ of the scores
            ``observed`` was given.
        X_far: ``k x d`` configurations of the far-out scores.
        y_far: ``k`` far-out scores on ``inliers``' scale $z$.
        scale: $b$ (the evidences are compared on ``observed``'s scale).

    Returns:
        Positive where the far-out scores are better explained as outliers.
    """
    n = observed.train_targets.shape[-1]
    posterior = inliers.posterior(X_far, observation_noise=True)
    residual2 = (y_far - posterior.mean.squeeze(-1)) ** 2
    variance = torch.maximum(posterior.variance.squeeze(-1), residual2)
    far = -0.5 * ((2 * math.pi * variance).log() + residual2 / variance)
    k = y_far.shape[0]
    as_outliers = log_evidence(inliers) + far.sum() - n * math.log(scale)
    as_outliers = as_outliers - k / (OUTLIER_SHARE * n)
    return float(as_outliers - log_evidence(observed))


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


def screen_far_out(
    observations: Observations, fit: AddTreeFit
) -> tuple[Observations, AddTreeGP | None]:
    """The observations to propose from and the global model fitted to them.

    Without far-out scores nothing is fitted (the model is ``None``). Otherwise a copy
    of ``fit`` fits the other rows and ``fit`` all rows, each warm-started from its
    state; where the log odds of "outliers"
    ([`outlier_log_odds()`][treebo.add_tree.outliers.outlier_log_odds]) are positive,
    the far-out rows leave the observations for ``X_left_out``, and ``fit`` takes
    the copy's state.

    Args:
        observations: What the strategy was given.
        fit: The strategy's [`AddTreeFit`][treebo.add_tree.fitting.AddTreeFit].
    """
    rows = far_out_rows(observations.y, observations.failed)
    if not bool(rows.any()):
        return observations, None
    reduced, shift, scale = leave_out(observations, rows)
    apart = copy.deepcopy(fit)
    try:
        inliers = apart.fit(reduced)
    except (ModelFittingError, RuntimeError, ValueError):  # keep what fits
        return observations, fit.fit(observations)
    observed = fit.fit(observations)
    X_far = observations.X[rows]
    y_far = (observations.y[rows].squeeze(-1) - shift) / scale
    if outlier_log_odds(observed, inliers, X_far, y_far, scale) <= 0:
        return observations, observed
    vars(fit).update(vars(apart))
    return dataclasses.replace(reduced, X_left_out=X_far), inliers
