r"""The exact marginal log likelihood with a gradient from the Cholesky factor.

For training targets $y \sim \mathcal N(\mu, K)$ (``K`` the kernel matrix plus the
noise), with $r = y - \mu$ and $\alpha = K^{-1} r$,

$$
\log p(y) = -\tfrac12 r^\top \alpha - \tfrac12 \log\lvert K\rvert
- \tfrac n2 \log 2\pi,
\qquad
\frac{\partial \log p}{\partial K} = \tfrac12\left(\alpha\alpha^\top - K^{-1}\right),
\qquad
\frac{\partial \log p}{\partial r} = -\alpha
$$

(Rasmussen & Williams, 2006, Eq. 5.9). GPyTorch's exact marginal log likelihood (with
BoTorch's settings) differentiates through the Cholesky factorization with autograd:
two triangular solves with ``n`` right-hand sides and a few ``n x n`` products, about
eight times the factorization's cost. Here $K^{-1}$ comes from the factor directly
(LAPACK's ``potri``, about twice the factorization's cost), so one evaluation of the
objective and its gradient costs about three factorizations instead of nine. The values
are the same, and
[`CholeskyMarginalLogLikelihood`][treebo.gp.exact_mll.CholeskyMarginalLogLikelihood] is
a drop-in ``ExactMarginalLogLikelihood`` for BoTorch's ``fit_gpytorch_mll``.

Where the model's covariance is block diagonal (a model that implements
[`BlockDiagonalCovariance`][treebo.gp.exact_mll.BlockDiagonalCovariance], e.g. an
Add-Tree GP whose root owns no parameter: points on different branches do not covary),
the blocks are factored as one batch, padded to the largest with unit variances and zero
residuals (each pad adds $-\tfrac12 \log 2\pi$, which is taken back out):
$\sum_b \log \mathcal N(r_b; 0, K_b)$ at $\sum_b n_b^3$ instead of $n^3$, and the
kernel evaluated on the blocks' pairs only. The same padding lets models with different
numbers of points share one batched evaluation
([`PaddedMarginalLogLikelihood`][treebo.gp.exact_mll.PaddedMarginalLogLikelihood]).
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import torch
from botorch.models import SingleTaskGP
from gpytorch import settings
from gpytorch.distributions import MultivariateNormal
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.mlls import ExactMarginalLogLikelihood
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor


class _GaussianLogDensity(torch.autograd.Function):
    """``log N(r; 0, K)`` with the gradient of the module docstring (no double
    backward)."""

    @staticmethod
    def forward(ctx, residual: Tensor, covariance: Tensor) -> Tensor:
        batch = torch.broadcast_shapes(residual.shape[:-1], covariance.shape[:-2])
        n = residual.shape[-1]
        L = psd_safe_cholesky(covariance.expand(*batch, n, n))
        r = residual.expand(*batch, n).unsqueeze(-1)
        alpha = torch.cholesky_solve(r, L).squeeze(-1)
        half_logdet = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        ctx.save_for_backward(L, alpha)
        ctx.shapes = (residual.shape, covariance.shape)
        quad = (r.squeeze(-1) * alpha).sum(-1)
        return -0.5 * quad - half_logdet - 0.5 * n * math.log(2.0 * math.pi)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        L, alpha = ctx.saved_tensors
        residual_shape, covariance_shape = ctx.shapes
        grad_r = grad_K = None
        if ctx.needs_input_grad[0]:
            grad_r = (-grad.unsqueeze(-1) * alpha).sum_to_size(residual_shape)
        if ctx.needs_input_grad[1]:
            outer = alpha.unsqueeze(-1) * alpha.unsqueeze(-2)
            grad_K = outer.sub_(torch.cholesky_inverse(L))
            grad_K = grad_K.mul_(0.5 * grad.unsqueeze(-1).unsqueeze(-1))
            grad_K = grad_K.sum_to_size(covariance_shape)
        return grad_r, grad_K


def gaussian_log_density(residual: Tensor, covariance: Tensor) -> Tensor:
    r"""$\log \mathcal N(r; 0, K)$, differentiable in both arguments.

    Args:
        residual: ``*b x n`` residuals $r = y - \mu$.
        covariance: ``*b x n x n`` positive definite covariances (batch shapes
            broadcast with ``residual``'s). Jitter is added where the factorization
            fails, as GPyTorch does.

    Returns:
        ``*b`` log densities.

    Example:
        >>> K = torch.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=torch.float64)
        >>> r = torch.tensor([0.3, -0.2], dtype=torch.float64)
        >>> reference = torch.distributions.MultivariateNormal(torch.zeros(2), K)
        >>> bool(torch.isclose(gaussian_log_density(r, K), reference.log_prob(r)))
        True
    """
    return _GaussianLogDensity.apply(residual, covariance)


@runtime_checkable
class BlockDiagonalCovariance(Protocol):
    """A model that can say when its training covariance is block diagonal."""

    def covariance_blocks(self) -> Tensor | None:
        """``n`` block labels ``0 .. B - 1`` of the training points (points with
        different labels do not covary), or ``None`` where blocks would not pay."""


def padded_blocks(labels: Tensor) -> tuple[Tensor, Tensor]:
    """The points of each block, padded to the largest block.

    Args:
        labels: ``n`` block labels ``0 .. B - 1``.

    Returns:
        ``(index, mask)``, each ``B x m`` (``m`` the largest block's size): the
        points of block ``b`` in their order, then pads (point 0), and which
        entries are points. ``index[mask]`` lists the points block after block.

    Example:
        >>> index, mask = padded_blocks(torch.tensor([1, 0, 1, 1]))
        >>> index.tolist(), mask.tolist()
        ([[1, 0, 0], [0, 2, 3]], [[True, False, False], [True, True, True]])
    """
    n = labels.shape[-1]
    counts = torch.bincount(labels)
    B, size = counts.numel(), int(counts.max())
    order = torch.argsort(labels, stable=True)
    starts = counts.cumsum(0) - counts
    block = torch.repeat_interleave(torch.arange(B, device=labels.device), counts)
    within = torch.arange(n, device=labels.device) - starts[block]
    index = torch.zeros(B, size, dtype=torch.long, device=labels.device)
    index[block, within] = order
    mask = torch.zeros(B, size, dtype=torch.bool, device=labels.device)
    mask[block, within] = True
    return index, mask


def padded_block_system(
    model: SingleTaskGP, X: Tensor, index: Tensor, mask: Tensor
) -> tuple[Tensor, Tensor]:
    """The training covariance's diagonal blocks and the residuals, padded.

    Args:
        model: An exact GP with one output and no batch shape.
        X: ``n x d`` training inputs as the kernel sees them (transformed).
        index: ``B x m`` point indices from
            [`padded_blocks()`][treebo.gp.exact_mll.padded_blocks].
        mask: ``B x m``, which entries of ``index`` are points.

    Returns:
        ``(K, r)``: ``B x m x m`` blocks of the kernel matrix plus the noise, with
        unit variance and no covariance on pads, and ``B x m`` residuals
        ``y - mu`` (zero on pads).
    """
    y = model.train_targets
    n = y.shape[-1]
    Xb = X[index]  # the kernel on the blocks' pairs only
    K = model.covar_module(Xb).to_dense()
    noise = model.likelihood.noise
    noise = noise[..., index] if noise.shape[-1] == n else noise.expand(*mask.shape)
    pair = mask.unsqueeze(-1) & mask.unsqueeze(-2)
    K = torch.where(pair, K, 0.0) + torch.diag_embed(torch.where(mask, noise, 1.0))
    residual = torch.where(mask, y[index] - model.mean_module(Xb), 0.0)
    return K, residual


def block_log_density(model: SingleTaskGP, labels: Tensor) -> Tensor:
    r"""$\log \mathcal N(y; \mu, K)$ of a single-batch exact GP's training targets,
    from the diagonal blocks of $K$ (the module docstring).

    Args:
        model: An exact GP with one output and no batch shape (a ``SingleTaskGP``
            or subclass, e.g. an Add-Tree GP).
        labels: ``n`` block labels ``0 .. B - 1``.

    Returns:
        A 0-dimensional tensor.
    """
    X = model.train_inputs[0]
    if model.training:  # BoTorch keeps them untransformed in train mode
        X = model.transform_inputs(X)
    index, mask = padded_blocks(labels.to(X.device))
    K, residual = padded_block_system(model, X, index, mask)
    pads = mask.numel() - int(mask.sum())
    log_density = gaussian_log_density(residual, K).sum(-1)
    return log_density + 0.5 * pads * math.log(2.0 * math.pi)


class CholeskyMarginalLogLikelihood(ExactMarginalLogLikelihood):
    """GPyTorch's exact marginal log likelihood (the priors' log densities added,
    divided by ``n``) with the gradient of the module docstring.

    Takes the place of ``ExactMarginalLogLikelihood`` anywhere, e.g. in BoTorch's
    ``fit_gpytorch_mll``; other NaN policies than GPyTorch's default fall back to the
    parent's computation. For a model with a block-diagonal training covariance
    ([`BlockDiagonalCovariance`][treebo.gp.exact_mll.BlockDiagonalCovariance]) the
    value is computed block by block (``target`` must then be the model's training
    targets, as in a fit).

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> X = torch.rand(20, 2, dtype=torch.float64)
        >>> model = SingleTaskGP(X, torch.sin(6 * X).sum(-1, keepdim=True))
        >>> mll = CholeskyMarginalLogLikelihood(model.likelihood, model)
        >>> reference = ExactMarginalLogLikelihood(model.likelihood, model)
        >>> output = model(X)
        >>> bool(torch.isclose(mll(output, model.train_targets),
        ...                    reference(output, model.train_targets)))
        True
    """

    def forward(
        self, function_dist: MultivariateNormal, target: Tensor, *params, **kwargs
    ) -> Tensor:
        if settings.observation_nan_policy.value() != "ignore":
            return super().forward(function_dist, target, *params, **kwargs)
        if not isinstance(function_dist, MultivariateNormal):
            raise RuntimeError(
                "CholeskyMarginalLogLikelihood needs a MultivariateNormal, got "
                f"{type(function_dist).__name__}."
            )
        labels = None
        if (
            isinstance(self.model, BlockDiagonalCovariance)
            and target is self.model.train_targets
        ):
            labels = self.model.covariance_blocks()
        if labels is not None:
            res = block_log_density(self.model, labels)
        else:
            output = self.likelihood(function_dist, *params, **kwargs)
            res = gaussian_log_density(target - output.mean, output.covariance_matrix)
        res = self._add_other_terms(res, params)
        return res.div_(function_dist.event_shape.numel())


class PaddedMarginalLogLikelihood(CholeskyMarginalLogLikelihood):
    r"""The marginal log likelihoods of a batch of models whose training data are
    padded: batch member ``r`` holds its ``sizes[r]`` points first, then pads.

    A pad gets unit variance, no covariance and a zero residual, so that member ``r``'s
    value is its own model's, $\big(\log \mathcal N(y_r; \mu_r, K_r) +
    \log p(\theta_r)\big) / n_r$, with its own gradient: the pads' factor is the
    identity, and their $-\tfrac12 \log 2\pi$ each is taken back out.

    Args:
        likelihood: The batched model's Gaussian likelihood.
        model: An exact GP with batch shape ``R`` and ``R x n`` training targets.
        sizes: ``R`` numbers of points (at most ``n``), in the targets' dtype.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> X = torch.rand(2, 6, 1, dtype=torch.float64)
        >>> X[1, 4:] = X[1, 0]  # member 1: 4 points and 2 pads
        >>> model = SingleTaskGP(X, torch.sin(6 * X), outcome_transform=None)
        >>> sizes = torch.tensor([6.0, 4.0], dtype=torch.float64)
        >>> mll = PaddedMarginalLogLikelihood(model.likelihood, model, sizes)
        >>> values = mll(model(X), model.train_targets)
        >>> x = X[1, :4]
        >>> alone = SingleTaskGP(x, torch.sin(6 * x), outcome_transform=None)
        >>> own = CholeskyMarginalLogLikelihood(alone.likelihood, alone)
        >>> bool(torch.isclose(values[1], own(alone(x), alone.train_targets)))
        True
    """

    def __init__(
        self, likelihood: GaussianLikelihood, model: SingleTaskGP, sizes: Tensor
    ) -> None:
        super().__init__(likelihood, model)
        self.sizes = sizes

    def forward(
        self, function_dist: MultivariateNormal, target: Tensor, *params, **kwargs
    ) -> Tensor:
        n = target.shape[-1]
        points = torch.arange(n, device=target.device) < self.sizes.unsqueeze(-1)
        pair = points.unsqueeze(-1) & points.unsqueeze(-2)
        output = self.likelihood(function_dist, *params, **kwargs)
        eye = torch.eye(n, dtype=target.dtype, device=target.device)
        covariance = torch.where(pair, output.covariance_matrix, eye)
        residual = torch.where(points, target - output.mean, 0.0)
        res = gaussian_log_density(residual, covariance)
        res = res + 0.5 * (n - self.sizes) * math.log(2.0 * math.pi)
        return self._add_other_terms(res, params) / self.sizes
