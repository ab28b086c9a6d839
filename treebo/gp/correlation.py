r"""Stationary correlations of squared distances, with hand-written gradients.

[`stationary_correlation()`][treebo.gp.correlation.stationary_correlation] evaluates the
RBF or Matern-5/2 correlation of a squared distance
([`matern52_parts()`][treebo.gp.correlation.matern52_parts] also returns the factor of
the Matern derivative; [`pairwise_sq_dist()`][treebo.gp.correlation.pairwise_sq_dist]
forms squared distances). The derivatives do not support double backward.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

_SQRT5 = math.sqrt(5.0)


def matern52_parts(sq_dist: Tensor) -> tuple[Tensor, Tensor]:
    r"""Matern-5/2 correlation and the factor of its derivative.

    For squared distances $r^2 \ge 0$, returns
    $\kappa = (1 + \sqrt5 r + 5r^2/3)e^{-\sqrt5 r}$ and
    $t = (1 + \sqrt5 r) e^{-\sqrt5 r}$, with $d\kappa/d(r^2) = -\tfrac56 t$ (finite at
    $r = 0$).

    Args:
        sq_dist: Squared scaled distances, any shape.

    Returns:
        ``(kappa, t)``, both of ``sq_dist``'s shape.

    Example:
        >>> k, t = matern52_parts(torch.tensor([0.0, 1.0], dtype=torch.float64))
        >>> [round(v, 4) for v in k.tolist()], [round(v, 4) for v in t.tolist()]
        ([1.0, 0.524], [1.0, 0.3459])
    """
    r = sq_dist.clamp_min(0).sqrt()
    e = r.mul(-_SQRT5).exp_()
    t = r.mul_(_SQRT5).add_(1.0).mul_(e)  # (1 + sqrt5 r) e, in r's storage
    k = torch.add(t, sq_dist * e, alpha=5.0 / 3.0)
    return k, t


class _Matern52FromSquared(torch.autograd.Function):
    r"""Matern-5/2 correlation of squared distances with a fused backward.

    Saving only the derivative factor of
    [`matern52_parts()`][treebo.gp.correlation.matern52_parts] keeps memory and time of
    the backward pass low on large ``n x m x S`` tensors.
    """

    @staticmethod
    def forward(ctx, sq_dist: Tensor) -> Tensor:
        k, t = matern52_parts(sq_dist)
        ctx.save_for_backward(t)
        return k

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        (t,) = ctx.saved_tensors
        return grad * t * (-5.0 / 6.0)


def pairwise_sq_dist(a: Tensor, b: Tensor) -> Tensor:
    r"""Squared Euclidean distances between the rows of two point sets.

    Low dimensions (``D <= 4``) take differences feature by feature; higher ones use
    $|a|^2 + |b|^2 - 2 a \cdot b$ about the mean of ``a`` (clamped at 0).

    Args:
        a: ``... x n x D``.
        b: ``... x m x D`` (batch shapes broadcast with ``a``'s).

    Returns:
        ``... x n x m`` squared distances.

    Example:
        >>> a = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
        >>> pairwise_sq_dist(a, a).tolist()
        [[0.0, 2.0], [2.0, 0.0]]
    """
    if a.shape[-1] <= 4:
        # Feature by feature, accumulated in one n x m buffer (no D x n x m
        # temporary; in place only where autograd does not need the values).
        sq = None
        for i in range(a.shape[-1]):
            diff = a[..., i].unsqueeze(-1) - b[..., i].unsqueeze(-2)
            if diff.requires_grad:
                sq = diff.square() if sq is None else sq + diff.square()
            else:
                sq = diff.mul_(diff) if sq is None else sq.addcmul_(diff, diff)
        return sq
    # |a - b|^2 = |a|^2 + |b|^2 - 2 a.b, centred for accuracy.
    centre = a.mean(dim=-2, keepdim=True)
    a, b = a - centre, b - centre
    sq = a.pow(2).sum(-1).unsqueeze(-1) + b.pow(2).sum(-1).unsqueeze(-2)
    return sq.sub_(a @ b.transpose(-1, -2), alpha=2.0).clamp_min_(0)


def stationary_correlation(sq_dist: Tensor, base_kernel: str) -> Tensor:
    r"""Correlation $\kappa(r)$ from squared scaled distances $r^2$.

    Args:
        sq_dist: Tensor of squared distances, any shape.
        base_kernel: ``"rbf"`` ($e^{-r^2/2}$) or ``"matern52"``
            ($(1 + \sqrt5 r + 5r^2/3) e^{-\sqrt5 r}$).

    Returns:
        Tensor of the same shape.
    """
    if base_kernel == "rbf":
        return torch.exp(-0.5 * sq_dist)
    return _Matern52FromSquared.apply(sq_dist)
