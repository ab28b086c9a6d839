r"""A monotone warp of the scores, fitted to make them look Gaussian.

Objectives such as a cross-validated error are heavy-tailed: most
configurations score near the best, a few are terrible. Standardized, those
few set the scale, every good configuration looks alike to a GP, and the
acquisition explores where it should compare. The Yeo-Johnson transform
(Yeo & Johnson, 2000)

.. math::

    \psi_\lambda(y) = \begin{cases}
        ((1 + y)^\lambda - 1) / \lambda & y \ge 0,\ \lambda \ne 0 \\
        \log(1 + y) & y \ge 0,\ \lambda = 0 \\
        -((1 - y)^{2 - \lambda} - 1) / (2 - \lambda) & y < 0,\ \lambda \ne 2 \\
        -\log(1 - y) & y < 0,\ \lambda = 2
    \end{cases}

is monotone in :math:`y` for every :math:`\lambda`: :math:`\lambda > 1`
compresses a long lower tail (bad scores, when scores are maximized) and
stretches the upper one, :math:`\lambda = 1` is the identity. :math:`\lambda`
maximizes the Gaussian profile log-likelihood of the transformed scores,

.. math::

    \ell(\lambda) = -\tfrac{n}{2} \log \hat\sigma^2_\lambda
        + (\lambda - 1) \sum_i \operatorname{sign}(y_i) \log(1 + |y_i|),

evaluated on a grid of :math:`\lambda` values in one tensor operation. The
scores are standardized before and after, so the warp is the same for
:math:`c f + b` as for :math:`f` (:math:`c > 0`).

Example:
    >>> import torch
    >>> y = torch.tensor([0.0, -0.1, -0.2, -0.3, -5.0], dtype=torch.float64)
    >>> warped = warp_scores(y.unsqueeze(-1))
    >>> bool((warped.squeeze(-1).argsort() == y.argsort()).all())  # monotone
    True
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

#: The grid of Yeo-Johnson exponents searched by :func:`fit_yeo_johnson`.
LAMBDA_GRID = (-2.0, 4.0, 121)


def yeo_johnson(y: Tensor, lam: Tensor | float) -> Tensor:
    r"""The Yeo-Johnson transform :math:`\psi_\lambda(y)`, elementwise.

    Args:
        y: Values of any shape.
        lam: Exponent(s), broadcastable against ``y``.

    Returns:
        :math:`\psi_\lambda(y)` in the broadcast shape of ``y`` and ``lam``.
    """
    lam = torch.as_tensor(lam, dtype=y.dtype, device=y.device)
    pos = y >= 0
    # |y| through log1p on the side that applies; the other side's branch is
    # evaluated on a safe argument and discarded by the mask.
    log_pos = torch.log1p(y.clamp(min=0))
    log_neg = torch.log1p((-y).clamp(min=0))
    lam_pos = torch.where(lam.abs() < 1e-8, torch.ones_like(lam), lam)
    two_minus = 2.0 - lam
    lam_neg = torch.where(two_minus.abs() < 1e-8, torch.ones_like(lam), two_minus)
    upper = torch.where(
        lam.abs() < 1e-8, log_pos, torch.expm1(lam_pos * log_pos) / lam_pos
    )
    lower = torch.where(
        two_minus.abs() < 1e-8, -log_neg, -torch.expm1(lam_neg * log_neg) / lam_neg
    )
    return torch.where(pos, upper, lower)


def fit_yeo_johnson(y: Tensor, grid: Tensor | None = None) -> Tensor:
    r"""The exponent on ``grid`` that maximizes the profile log-likelihood.

    Args:
        y: ``n`` values (standardized: the likelihood is not scale-free).
        grid: ``G`` candidate exponents (default: ``LAMBDA_GRID``, 121 values
            from -2 to 4).

    Returns:
        A 0-dimensional tensor: the best exponent.
    """
    if grid is None:
        grid = torch.linspace(*LAMBDA_GRID[:2], LAMBDA_GRID[2])
    grid = grid.to(y)
    psi = yeo_johnson(y.unsqueeze(0), grid.unsqueeze(-1))  # G x n
    var = psi.var(dim=-1, unbiased=False).clamp(min=torch.finfo(y.dtype).tiny)
    jacobian = (y.sign() * torch.log1p(y.abs())).sum()
    loglik = -0.5 * y.shape[0] * var.log() + (grid - 1.0) * jacobian
    return grid[loglik.argmax()]


def warp_scores(scores: Tensor, failed: Tensor | None = None) -> Tensor:
    r"""Scores standardized, Yeo-Johnson warped, and standardized again.

    Args:
        scores: ``n x 1`` scores to maximize.
        failed: ``n`` booleans marking failed trials, which take the lowest
            warped score and do not enter the fit (default: none failed).

    Returns:
        ``n x 1`` warped scores with zero mean and unit variance over the
        successful trials; their order is the order of ``scores``. Fewer
        than three successes are only standardized.
    """
    y = scores.squeeze(-1)
    ok = torch.ones_like(y, dtype=torch.bool) if failed is None else ~failed
    good = y[ok]
    if good.numel() < 3 or not bool(good.std() > 0):
        return scores
    z = (good - good.mean()) / good.std()
    psi = yeo_johnson(z, fit_yeo_johnson(z))
    spread = psi.std()
    psi = (psi - psi.mean()) / (spread if bool(spread > 0) else 1.0)
    out = torch.full_like(y, math.nan)
    out[ok] = psi
    out = torch.where(ok, out, psi.min())
    return out.unsqueeze(-1)
