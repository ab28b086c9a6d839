"""An experiment: LogEI integrated over the hyper-parameters' posterior.

A MAP fit is sure of a sparsely sampled branch (docs/design.md, "five HPO-B seeds
and the wrong-branch trap"). Snoek et al. (2012) average EI over posterior draws of
the hyper-parameters instead of plugging in one fit. Here the posterior is Laplace's
approximation at the MAP fit: a Gaussian over the raw (unconstrained) parameters
with the inverse Hessian of the negative log posterior (the marginal likelihood and
the priors) as covariance, the Hessian by central differences of the gradient. The
acquisition is the log of the mean EI over the MAP model and ``DRAWS`` models drawn
from it.

``treebo_laplace_ei``: the default loop with this acquisition for its global
proposals and pool scoring (local steps and the step after a tie unchanged).
"""

from __future__ import annotations

import copy
import math

import torch
from botorch.acquisition import AcquisitionFunction, LogExpectedImprovement
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from treebo.add_tree import AddTreeStrategy
from treebo.add_tree.global_search import LogEISearch
from treebo.add_tree.model import AddTreeGP

from .treebo import PRESETS, register_preset

#: Models drawn from the Laplace approximation, beside the MAP model.
DRAWS = 7
#: Curvature below this (per raw parameter) is raised to it: a direction the
#: posterior does not bound gets a standard deviation of at most 1.
MIN_CURVATURE = 1.0


class IntegratedLogEI(AcquisitionFunction):
    """``log(mean_k EI_k(x))`` over models that differ in their hyper-parameters."""

    def __init__(self, models: list[AddTreeGP], best_f: Tensor) -> None:
        super().__init__(models[0])
        self.parts = torch.nn.ModuleList(
            LogExpectedImprovement(m, best_f=best_f) for m in models
        )

    def forward(self, X: Tensor) -> Tensor:
        values = torch.stack([part(X) for part in self.parts])
        return torch.logsumexp(values, dim=0) - math.log(len(self.parts))


def laplace_draws(model: AddTreeGP, k: int, seed: int) -> list[AddTreeGP]:
    """``k`` copies of ``model`` with raw hyper-parameters drawn from Laplace's
    approximation of their posterior at ``model``'s (MAP) values."""
    params = [p for p in model.parameters() if p.requires_grad]
    theta = parameters_to_vector(params).detach().clone()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    n = model.train_targets.shape[-1]

    def gradient(t: Tensor) -> Tensor:
        with torch.no_grad():
            vector_to_parameters(t, params)
        model.train()
        output = model(*model.train_inputs)
        loss = -mll(output, model.train_targets).sum() * n  # -log posterior
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        return torch.cat(
            [
                (g if g is not None else torch.zeros_like(p)).reshape(-1)
                for g, p in zip(grads, params, strict=True)
            ]
        )

    h = 1e-4
    eye = torch.eye(theta.numel(), dtype=theta.dtype)
    try:
        rows = [
            (gradient(theta + h * e) - gradient(theta - h * e)) / (2 * h) for e in eye
        ]
    finally:
        with torch.no_grad():
            vector_to_parameters(theta, params)
        model.eval()
    hessian = torch.stack(rows)
    hessian = (hessian + hessian.T) / 2
    values, vectors = torch.linalg.eigh(hessian)
    scale = vectors * values.clamp_min(MIN_CURVATURE).rsqrt()  # cov = S S^T
    generator = torch.Generator().manual_seed(seed)
    draws = []
    for _ in range(k):
        eps = torch.randn(theta.numel(), generator=generator, dtype=theta.dtype)
        other = copy.deepcopy(model)
        other_params = [p for p in other.parameters() if p.requires_grad]
        with torch.no_grad():
            vector_to_parameters(theta + scale @ eps, other_params)
        other.eval()
        try:
            other.solve_cache()
        except (RuntimeError, ValueError):  # e.g. a Gram matrix that is not PD
            continue
        draws.append(other)
    return draws


class LaplaceLogEISearch(LogEISearch):
    """LogEI integrated over Laplace draws of the hyper-parameters."""

    def acquisition(self, model: AddTreeGP, y: Tensor) -> AcquisitionFunction:
        seed = int(y.shape[-2])  # a new draw per proposal, reproducible
        models = [model, *laplace_draws(model, DRAWS, seed)]
        return IntegratedLogEI(models, best_f=y.max())


if "treebo_laplace_ei" not in PRESETS:
    register_preset(
        "treebo_laplace_ei", lambda: AddTreeStrategy(search=LaplaceLogEISearch())
    )
