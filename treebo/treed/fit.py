r"""Fitting a [`TreedGP`][treebo.treed.model.TreedGP] with its mean and scales profiled
out.

The weighted pseudo-likelihood of a treed GP (Assael et al., 2014, eq. 8-9) is a sum
over pseudo-likelihood factors $f$ of Gaussian log densities of the residuals
$y_f - \mu_l$ under $\sigma_l^2 (R_l + \lambda_l I)$, where leaf $l$ owns the factor,
$R_l$ is its Matern-5/2 correlation (lengthscales $\ell_l$, optional input warp),
$\sigma_l^2$ its output scale and $\lambda_l = s_l^2 / \sigma_l^2$ its noise-to-signal
ratio. For fixed $(\ell_l, \lambda_l)$ the best constant
mean is a generalized least-squares estimate and the best log output scale
$t_l = \log \sigma_l^2$ solves a strictly concave 1-D problem:

$$
\mu_l^* = \frac{\sum_f w_f\, 1^\top C_f^{-1} y_f}
               {\sum_f w_f\, 1^\top C_f^{-1} 1},
\qquad
t_l^* = \arg\max_t\; -\tfrac12 Q_l e^{-t} - \tfrac12 N_l t
    + \log p_\sigma(e^t) + \log p_s(\lambda_l e^t),
$$

with $C_f = R_l + \lambda_l I$ on the factor's points, $Q_l = \sum_f w_f (y_f -
\mu_l^*)^\top C_f^{-1} (y_f - \mu_l^*)$, $N_l = \sum_f w_f
n_f$, and $p_\sigma$, $p_s$ the log-normal priors of the output scale and the noise
(Newton's method, a few steps). L-BFGS-B then searches only the lengthscales, the ratios
and the warps. This is the same maximum a posteriori point as optimizing all
hyper-parameters together
([`WeightedPseudoLikelihood`][treebo.treed.fit.WeightedPseudoLikelihood], the objective
as a GPyTorch marginal likelihood, which ``botorch.fit.fit_gpytorch_mll`` dispatches
here), in fewer iterations: the mean and the output scale are the directions along which
the full objective is flattest. Gradients need no differentiation through $\mu^*$ or
$t^*$ (they are stationary points, so the envelope theorem applies), except where the
noise floor binds and $t^* = \log s_{\min}^2 - \log
\lambda_l$ is differentiated as written.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from botorch.optim.closures import ForwardBackwardClosure
from botorch.optim.core import OptimizationResult, scipy_minimize
from botorch.optim.utils import get_parameters_and_bounds
from gpytorch.mlls import MarginalLogLikelihood
from torch import Tensor

from treebo.treed.profile import (
    MaternGaussianQuadratics,
    ProfiledLeafObjective,
    profile_leaves,
)

if TYPE_CHECKING:
    from treebo.treed.model import TreedGP

#: Smallest noise-to-signal ratio the fit considers (the noise floor of the
#: model still bounds the noise itself).
MIN_NOISE_RATIO = 1e-10
#: Isotropic start lengthscales tried for each leaf (unit-cube inputs,
#: raised to the lengthscales' lower bound;
#: [`start_from_grid()`][treebo.treed.fit.start_from_grid]).
START_LENGTHSCALES = (0.025, 0.05, 0.1, 0.2, 0.4, 0.8)
#: Start log noise-to-signal ratios tried for each leaf.
START_LOG_RATIOS = (math.log(1e-6), math.log(1e-3), math.log(1e-1))
#: Matrix entries (factors x rows^2) of the candidates scored in one pass.
START_BATCH_ENTRIES = 2**21
#: The priors handled inside the profile (names in ``model.named_priors()``).
PROFILED_PRIORS = (
    "covar_module.base_kernel.outputscale_prior",
    "likelihood.noise_covar.noise_prior",
)


def _log_normal(prior: torch.nn.Module) -> tuple[float, float]:
    """``(loc, scale)`` of a log-normal prior on a variance."""
    return float(prior.loc), float(prior.scale)


def profiled_pseudo_log_likelihood(
    model: torch.nn.Module, log_ratio: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    r"""The weighted pseudo-likelihood with the means and output scales profiled.

    Args:
        model: A [`TreedGP`][treebo.treed.model.TreedGP] (its lengthscales and warps are
            used; its means, output scales and noises are not).
        log_ratio: ``L``: each leaf's $\log \lambda_l$.

    Returns:
        ``(value, mean, log_scale)``: the weighted pseudo-likelihood plus the log priors
        of the output scales and noises at $(\mu^*, t^*)$ (0-dimensional, differentiable
        in the lengthscales, warps and ``log_ratio``), and the ``L`` profiled means and
        log output scales (detached).
    """
    lengthscale = model.covar_module.base_kernel.base_kernel.lengthscale
    quadratics = _factor_quadratics(model, lengthscale, log_ratio)
    leaf, w_f, gram, half_logdet, n_f = quadratics
    priors, floor = _profiled_priors(model)
    value, mean, t = ProfiledLeafObjective.apply(
        gram, half_logdet, log_ratio, leaf, w_f, n_f, priors, floor
    )
    return value, mean, t


def _factor_quadratics(
    model: torch.nn.Module, lengthscale: Tensor, log_ratio: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    r"""Every pseudo-likelihood factor's Gaussian quadratic forms.

    Args:
        model: The [`TreedGP`][treebo.treed.model.TreedGP] (its factors and warps).
        lengthscale: ``... x L x 1 x d``: each leaf's lengthscales.
        log_ratio: ``... x L``: each leaf's $\log \lambda_l$.

    Returns:
        ``(leaf, weight, gram, half_logdet, count)`` of the ``F`` factors: the owning
        leaf and the weight (``F`` each), the ``... x F x 2 x 2`` Gram matrices
        $y^\top C^{-1} y$, $y^\top C^{-1} 1$, $1^\top C^{-1} 1$, the ``... x F`` values
        $\tfrac12 \log |C|$, and the weighted sizes (``F``).
    """
    ratio = log_ratio.exp()
    parts = []  # per group: leaf, weight, gram, log|C| / 2, weighted count
    for group in model.factor_groups():
        leaf, w = group.leaf, group.mask
        X = model._leaf_inputs(group.inputs, leaf)
        Z = X / lengthscale[..., leaf, :, :]  # ... x B x m x d
        diag = torch.addcmul(1 - w, w, ratio[..., leaf].unsqueeze(-1))
        rhs = group.rhs.expand(*diag.shape, group.rhs.shape[-1])
        gram, half_logdet = MaternGaussianQuadratics.apply(Z, diag, w, rhs)
        w_f = group.weight.to(Z)
        parts.append((leaf, w_f, gram, half_logdet, w_f * w.sum(-1)))
    # All factors at once (F of them).
    leaf, w_f, gram, half_logdet, n_f = zip(*parts, strict=True)
    return (
        torch.cat(leaf),
        torch.cat(w_f),
        torch.cat(gram, dim=-3),
        torch.cat(half_logdet, dim=-1),
        torch.cat(n_f),
    )


def _profiled_priors(
    model: torch.nn.Module,
) -> tuple[tuple[float, float, float, float], float]:
    """The log-normal priors named in
    [`PROFILED_PRIORS`][treebo.treed.fit.PROFILED_PRIORS] as ``(loc,
    scale)`` pairs (output scale, then noise), and the noise floor."""
    scale_prior = model.covar_module.base_kernel.outputscale_prior
    noise_prior = model.likelihood.noise_covar.noise_prior
    priors = (*_log_normal(scale_prior), *_log_normal(noise_prior))
    floor = float(model.likelihood.noise_covar.raw_noise_constraint.lower_bound)
    return priors, floor


def start_from_grid(model: torch.nn.Module, log_ratio: Tensor) -> Tensor:
    r"""Move each leaf's start to the best point of a small grid.

    The profiled objective is a sum of one term per leaf in that leaf's own lengthscales
    and ratio, so each leaf picks its own start: the best, by its term plus its
    lengthscales' log prior, of the current values and of every pair of an isotropic
    lengthscale in `START_LENGTHSCALES` and a noise-to-signal ratio in
    `START_LOG_RATIOS`. All ``G`` candidates are scored without gradients in batched
    passes (``G x F`` factors each, at most `START_BATCH_ENTRIES` matrix entries a
    pass); the lengthscales are written into the model.

    Args:
        model: The [`TreedGP`][treebo.treed.model.TreedGP].
        log_ratio: ``L``: each leaf's current $\log \lambda_l$.

    Returns:
        ``L``: each leaf's starting $\log \lambda_l$.

    Example:
        >>> import torch
        >>> from treebo.treed import TreedGP
        >>> X = torch.rand(40, 1, dtype=torch.float64)
        >>> model = TreedGP(X, torch.sin(20 * X))
        >>> start = torch.zeros(model.num_leaves, dtype=torch.float64)
        >>> log_ratio = start_from_grid(model, start)
        >>> log_ratio.shape == (model.num_leaves,)
        True
    """
    kernel = model.covar_module.base_kernel.base_kernel
    current = kernel.lengthscale.detach()  # L x 1 x d
    lower = kernel.raw_lengthscale_constraint.lower_bound.to(current)
    grid_ls = current.new_tensor(START_LENGTHSCALES).clamp(min=lower)
    grid_ratio = current.new_tensor(START_LOG_RATIOS)
    K, J, L = grid_ls.numel(), grid_ratio.numel(), log_ratio.shape[-1]
    on_grid = grid_ls.repeat_interleave(J).view(-1, 1, 1, 1)
    lengthscale = torch.cat(
        [on_grid.expand(K * J, *current.shape), current.unsqueeze(0)]
    )  # G x L x 1 x d
    ratio = torch.cat(
        [grid_ratio.repeat(K).unsqueeze(-1).expand(K * J, L), log_ratio.unsqueeze(0)]
    )  # G x L
    priors, floor = _profiled_priors(model)
    # Candidates per pass: about START_BATCH_ENTRIES matrix entries each.
    entries = sum(g.mask.shape[0] * g.mask.shape[1] ** 2 for g in model.factor_groups())
    per_pass = max(1, START_BATCH_ENTRIES // entries)
    with torch.no_grad():
        values = []
        passes = zip(lengthscale.split(per_pass), ratio.split(per_pass), strict=True)
        for ls, lr in passes:
            leaf, w_f, gram, half_logdet, n_f = _factor_quadratics(model, ls, lr)
            profile = profile_leaves(
                gram, half_logdet, lr, leaf, w_f, n_f, priors, floor
            )
            log_prior = kernel.lengthscale_prior.log_prob(ls).flatten(-2).sum(-1)
            values.append(profile.value + log_prior)
        best = torch.cat(values).argmax(dim=0)  # L
        leaves = torch.arange(L, device=best.device)
        kernel.lengthscale = lengthscale[best, leaves]
    return ratio[best, leaves]


def fit_treed_gp(
    model: torch.nn.Module,
    maxiter: int = 200,
    ftol: float = 1e-9,
    grid_start: bool = True,
) -> OptimizationResult:
    r"""Fit a [`TreedGP`][treebo.treed.model.TreedGP]'s hyper-parameters (MAP).

    Maximizes the weighted pseudo-likelihood plus the log priors (the objective of
    [`WeightedPseudoLikelihood`][treebo.treed.fit.WeightedPseudoLikelihood]) by L-BFGS-B
    over the lengthscales, the noise-to-signal ratios and the warps, with each leaf's
    mean and output scale profiled out (module docstring), then writes the means, output
    scales and noises into the model.

    Args:
        model: The [`TreedGP`][treebo.treed.model.TreedGP]; fitted in place from its
            current lengthscales, warps and noise-to-signal ratios, each leaf's moved
            first to the best point of a grid with ``grid_start``.
        maxiter: L-BFGS-B iterations.
        ftol: L-BFGS-B's relative tolerance on the objective.
        grid_start: Start each leaf from the best of its current values and a grid of
            lengthscales and noise ratios
            ([`start_from_grid()`][treebo.treed.fit.start_from_grid]). The objective has
            several local optima (smooth leaves with large noise, interpolating ones
            with tiny noise); the grid finds the better basin at the cost of a few
            evaluations without gradients.

    Returns:
        SciPy's `OptimizationResult` (``fval``: the negated objective divided by the
        number of training points).

    Example:
        >>> import torch
        >>> from treebo.treed import TreedGP
        >>> X = torch.rand(40, 1, dtype=torch.float64)
        >>> model = TreedGP(X, torch.where(X < 0.5, torch.sin(30 * X), X))
        >>> result = fit_treed_gp(model)
        >>> model.posterior(X[:3]).mean.shape
        torch.Size([3, 1])
    """
    if maxiter < 1:
        raise ValueError(f"maxiter must be >= 1, got {maxiter}.")
    scale = model.covar_module.base_kernel
    noise = model.likelihood.noise.detach().squeeze(-1)
    init = (noise / scale.outputscale.detach()).clamp(min=MIN_NOISE_RATIO).log()
    if grid_start:
        init = start_from_grid(model, init)
    log_ratio = init.clone().requires_grad_(True)
    free, bounds = get_parameters_and_bounds(
        model,
        requires_grad=True,
        name_filter=lambda name: "lengthscale" in name or name.startswith("warp."),
    )
    free = dict(free, log_ratio=log_ratio)
    bounds = dict(bounds, log_ratio=(math.log(MIN_NOISE_RATIO), None))
    other_priors = [
        (module, prior, closure)
        for name, module, prior, closure, _ in model.named_priors()
        if name not in PROFILED_PRIORS
    ]
    n = model.train_targets.shape[-1]

    def objective() -> Tensor:
        value, _, _ = profiled_pseudo_log_likelihood(model, log_ratio)
        for module, prior, closure in other_priors:
            value = value + prior.log_prob(closure(module)).sum()
        return -value / n

    model.train()
    result = scipy_minimize(
        closure=ForwardBackwardClosure(forward=objective, parameters=free),
        parameters=free,
        bounds=bounds,
        options={"maxiter": maxiter, "ftol": ftol},
    )
    with torch.no_grad():
        _, mean, log_scale = profiled_pseudo_log_likelihood(model, log_ratio)
        floor = model.likelihood.noise_covar.raw_noise_constraint.lower_bound
        model.mean_constant.copy_(mean)
        scale.outputscale = log_scale.exp()
        noise = torch.maximum((log_ratio + log_scale).exp(), floor.to(mean))
        model.likelihood.noise = noise.unsqueeze(-1)
    model.eval()
    return result


class WeightedPseudoLikelihood(MarginalLogLikelihood):
    r"""The objective that fits a [`TreedGP`][treebo.treed.model.TreedGP]'s leaves: the
    weighted pseudo-likelihood plus the log priors, divided by the number of training
    points. ``botorch.fit.fit_gpytorch_mll`` maximizes it (through
    [`custom_fit()`][treebo.treed.model.TreedGP.custom_fit]: L-BFGS-B over the
    lengthscales, warps and noise-to-signal ratios, with each leaf's mean and output
    scale profiled out; [`fit_treed_gp()`][treebo.treed.fit.fit_treed_gp]).

    Args:
        model: The [`TreedGP`][treebo.treed.model.TreedGP].
    """

    def __init__(self, model: TreedGP) -> None:
        super().__init__(model.likelihood, model)

    def forward(self, *args: Any, **kwargs: Any) -> Tensor:
        del args, kwargs  # the model holds its data
        model = self.model
        value = model.pseudo_log_likelihood()
        for _, module, prior, closure, _ in model.named_priors():
            value = value + prior.log_prob(closure(module)).sum()
        return value / model.train_targets.shape[-1]

    def compute_custom_loss(self) -> Tensor:
        """The loss BoTorch's fitting routine minimizes (``-self()``)."""
        return -self()
