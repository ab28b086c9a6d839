r"""Evidence for outliers: are far-out scores properties of their configurations?

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

import math

import torch
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

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
