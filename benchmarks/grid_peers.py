"""BoTorch peers over a grid: a GP, then EI or UCB at every grid point.

The GP is BoTorch's ``SingleTaskGP`` with a Matern-3/2 ARD kernel (BoTorch's
dimension-scaled log-normal length-scale prior) on the grid's unit coordinates, or
``MixedSingleTaskGP`` where the grid has categorical modes; the acquisition (LogEI,
or UCB as mean + 2 sd) is evaluated at every grid point in chunks and the best
unvisited point returned.
"""

from __future__ import annotations

import math
import warnings

import torch
from botorch.acquisition import LogExpectedImprovement, UpperConfidenceBound
from botorch.fit import fit_gpytorch_mll
from botorch.models import MixedSingleTaskGP, SingleTaskGP
from gpytorch.kernels import MaternKernel, ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.priors import LogNormalPrior

from treebo.bktf import Grid

CHUNK = 2**15


def unit_coordinates(grid: Grid, index: torch.Tensor) -> torch.Tensor:
    """``... x D`` model inputs of multi-indices: unit values, or the level's
    index for a categorical mode."""
    columns = [
        index[..., d].to(torch.float64)
        if grid.categorical[d]
        else grid.unit_values(d)[index[..., d]]
        for d in range(grid.dim)
    ]
    return torch.stack(columns, -1)


def fit_grid_gp(grid: Grid, X: torch.Tensor, y: torch.Tensor, seed: int):
    """The GP of ``y`` (``n x 1``, to maximize) at grid points ``X``."""
    train_X = unit_coordinates(grid, grid.indices(X))
    cat_dims = [d for d in range(grid.dim) if grid.categorical[d]]
    torch.manual_seed(seed)
    if cat_dims:
        model = MixedSingleTaskGP(train_X, y, cat_dims=cat_dims)
    else:
        D = grid.dim
        prior = LogNormalPrior(math.sqrt(2) + 0.5 * math.log(D), math.sqrt(3))
        kernel = ScaleKernel(
            MaternKernel(nu=1.5, ard_num_dims=D, lengthscale_prior=prior)
        )
        model = SingleTaskGP(train_X, y, covar_module=kernel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


def mean_and_sd(model: SingleTaskGP, cache: dict, Z: torch.Tensor):
    """Posterior mean and standard deviation (outcome scale) of a fitted
    ``SingleTaskGP`` at ``Z`` (``m x D``), from one Cholesky factor kept in
    ``cache``: the same numbers as ``model.posterior`` without its per-point
    batch overhead (16x faster on a 1.8-million-point grid)."""
    train_X = model.train_inputs[0]
    if "L" not in cache:
        K = model.covar_module(train_X).to_dense()
        noise = model.likelihood.noise.squeeze()
        L = torch.linalg.cholesky(K + noise * torch.eye(len(K), dtype=K.dtype))
        resid = (model.train_targets - model.mean_module.constant).unsqueeze(-1)
        cache.update(L=L, alpha=torch.cholesky_solve(resid, L))
    cross = model.covar_module(Z, train_X).to_dense()  # m x n
    mean = model.mean_module.constant + (cross @ cache["alpha"]).squeeze(-1)
    v = torch.linalg.solve_triangular(cache["L"], cross.T, upper=False)
    prior = model.covar_module.outputscale.expand(len(Z))
    var = (prior - v.square().sum(0)).clamp_min(1e-10)  # as gpytorch
    mean, var = model.outcome_transform.untransform(
        mean.unsqueeze(-1), var.unsqueeze(-1)
    )
    return mean.squeeze(-1), var.squeeze(-1).sqrt()


def log_ei(mean: torch.Tensor, sd: torch.Tensor, best: float) -> torch.Tensor:
    """log EI, stable far below the incumbent: with $h(z) = \\phi(z) + z \\Phi(z)$,
    for $z < -1$ it uses $h(z) = \\phi(z) (1 - |z| m(|z|))$ with the Mills ratio
    $m(t) = \\sqrt{\\pi / 2}\\,\\mathrm{erfcx}(t / \\sqrt 2)$."""
    z = (mean - best) / sd
    log_phi = -0.5 * z.square() - 0.5 * math.log(2 * math.pi)
    direct = torch.exp(log_phi) + z * torch.special.ndtr(z)
    t = (-z).clamp_min(1.0)
    mills = math.sqrt(math.pi / 2) * torch.special.erfcx(t / math.sqrt(2))
    tail = log_phi + torch.log1p(-t * mills)
    log_h = torch.where(z < -1, tail, direct.clamp_min(1e-300).log())
    return sd.log() + log_h


def gp_grid_proposal(
    method: str,
    grid: Grid,
    X: torch.Tensor,
    y: torch.Tensor,
    visited: torch.Tensor,
    seed: int,
) -> int:
    """The flat index of the best unvisited grid point under ``method``
    (``"gp_ei"``: LogEI, or ``"gp_ucb"``: mean + 2 sd)."""
    if method not in ("gp_ei", "gp_ucb"):
        raise ValueError(f"method must be gp_ei or gp_ucb, got {method!r}.")
    model = fit_grid_gp(grid, X, y, seed)
    if isinstance(model, MixedSingleTaskGP):
        acqf = (
            LogExpectedImprovement(model, best_f=y.max())
            if method == "gp_ei"
            else UpperConfidenceBound(model, beta=4.0)
        )

        def score(Z):
            return acqf(Z.unsqueeze(-2))
    else:
        cache: dict = {}
        best_f = float(y.max())

        def score(Z):
            mean, sd = mean_and_sd(model, cache, Z)
            return log_ei(mean, sd, best_f) if method == "gp_ei" else mean + 2 * sd

    best, best_flat = -math.inf, -1
    with torch.no_grad():
        for start in range(0, grid.numel, CHUNK):
            flat = torch.arange(start, min(start + CHUNK, grid.numel))
            scores = score(unit_coordinates(grid, grid.unflatten(flat)))
            local = visited[(visited >= start) & (visited < start + len(flat))]
            scores = scores.index_fill(0, local - start, -math.inf)
            value, i = scores.max(0)
            if float(value) > best:
                best, best_flat = float(value), start + int(i)
    return best_flat
