r"""Stationary correlations of squared distances, with hand-written gradients.

[`stationary_correlation()`][treebo.gp.correlation.stationary_correlation] evaluates the
RBF or Matern-5/2 correlation of a squared distance
([`matern52_parts()`][treebo.gp.correlation.matern52_parts] also returns the factor of
the Matern derivative; [`pairwise_sq_dist()`][treebo.gp.correlation.pairwise_sq_dist]
forms squared distances). [`SlotGram`][treebo.gp.correlation.SlotGram] computes the Gram
matrix of the slot encoding of [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel]
in one pass: for inputs ``a`` (``S x n x D``) and ``b`` (``S x m x D``) already divided
by their lengthscales, and pair weights ``w`` (``S x n x m``),

$$
K = \sum_s w_s \odot \kappa(\lVert a_s - b_s \rVert^2),
$$

with a backward pass of two batched matrix products per input (no
``S x n x m x D`` temporaries). Neither supports double backward.
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
        # Feature dimension first: the reduction runs over the outer axis.
        A, B = a.movedim(-1, 0), b.movedim(-1, 0)  # D x *b x S x n
        diff = A.unsqueeze(-1) - B.unsqueeze(-2)
        # In place only where autograd does not need the differences.
        diff = diff.square() if diff.requires_grad else diff.mul_(diff)
        return diff[0] if diff.shape[0] == 1 else diff.sum(0)
    # |a - b|^2 = |a|^2 + |b|^2 - 2 a.b, centred for accuracy.
    centre = a.mean(dim=-2, keepdim=True)
    a, b = a - centre, b - centre
    sq = a.pow(2).sum(-1).unsqueeze(-1) + b.pow(2).sum(-1).unsqueeze(-2)
    return sq.sub_(a @ b.transpose(-1, -2), alpha=2.0).clamp_min_(0)


class SlotGram(torch.autograd.Function):
    r"""Add-Tree Gram matrix from slot features, with a fused backward pass.

    Forward: $K_{nm} = \sum_s w_{snm}\,\kappa(\lVert a_{sn} - b_{sm}
    \rVert^2)$ for ``a``: ``*b x S x n x D``, ``b``: ``*b x S x m x D`` and weights
    ``w``: ``*b x S x n x m`` (batch shapes broadcast).

    Backward: with $g_{snm} = G_{nm} w_{snm} \kappa'(r^2_{snm})$, the input gradients
    are $2(a_{sn} \sum_m g_{snm} - \sum_m g_{snm} b_{sm})$ (and symmetrically for
    ``b``): two batched matrix products instead of ``S x n x m x D`` temporaries, and no
    autograd graph over the ``S x n x m`` intermediates.
    """

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor, w: Tensor, base_kernel: str) -> Tensor:
        sq = pairwise_sq_dist(a, b)
        needs_ab = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        if base_kernel == "rbf":
            k = sq.mul_(-0.5).exp_()
            dk = k if needs_ab else None  # dk/d(sq) = -k / 2, scaled in backward
            ctx.dk_scale = -0.5
        else:
            k, t = matern52_parts(sq)
            dk = t if needs_ab else None  # dk/d(sq) = -5/6 of this
            ctx.dk_scale = -5.0 / 6.0
        ctx.save_for_backward(a, b, w, k if ctx.needs_input_grad[2] else None, dk)
        return (k * w).sum(-3)

    @staticmethod
    def backward(ctx, grad: Tensor):
        a, b, w, k, dk = ctx.saved_tensors
        grad = grad.unsqueeze(-3)  # *b x 1 x n x m
        grad_a = grad_b = grad_w = None
        if dk is not None:
            g = (grad * w).mul_(dk)  # *b x S x n x m, without dk_scale
            two = 2.0 * ctx.dk_scale
            if ctx.needs_input_grad[0]:
                grad_a = (a * g.sum(-1, keepdim=True) - g @ b).mul_(two)
                grad_a = grad_a.sum_to_size(a.shape)
            if ctx.needs_input_grad[1]:
                gt = g.transpose(-1, -2)
                grad_b = (b * gt.sum(-1, keepdim=True) - gt @ a).mul_(two)
                grad_b = grad_b.sum_to_size(b.shape)
        if k is not None:
            grad_w = (grad * k).sum_to_size(w.shape)
        return grad_a, grad_b, grad_w, None


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
