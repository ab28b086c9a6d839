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


def gp_grid_proposal(
    method: str,
    grid: Grid,
    X: torch.Tensor,
    y: torch.Tensor,
    visited: torch.Tensor,
    seed: int,
) -> int:
    """The flat index of the best unvisited grid point under ``method``
    (``"gp_ei"`` or ``"gp_ucb"``)."""
    model = fit_grid_gp(grid, X, y, seed)
    if method == "gp_ei":
        acqf = LogExpectedImprovement(model, best_f=y.max())
    elif method == "gp_ucb":
        acqf = UpperConfidenceBound(model, beta=4.0)  # mean + 2 sd
    else:
        raise ValueError(f"method must be gp_ei or gp_ucb, got {method!r}.")
    best, best_flat = -math.inf, -1
    with torch.no_grad():
        for start in range(0, grid.numel, CHUNK):
            flat = torch.arange(start, min(start + CHUNK, grid.numel))
            Z = unit_coordinates(grid, grid.unflatten(flat))
            scores = acqf(Z.unsqueeze(-2))
            local = visited[(visited >= start) & (visited < start + len(flat))]
            scores = scores.index_fill(0, local - start, -math.inf)
            value, i = scores.max(0)
            if float(value) > best:
                best, best_flat = float(value), start + int(i)
    return best_flat
