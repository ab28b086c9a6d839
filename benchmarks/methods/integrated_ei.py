"""An experiment: LogEI integrated over the hyper-parameters' posterior.

A MAP fit is sure of a sparsely sampled branch (docs/design.md, "five HPO-B seeds
and the wrong-branch trap") and, on step-shaped data, of one mode of a flat and
multimodal marginal likelihood. Snoek et al. (2012) average EI over posterior draws
of the hyper-parameters instead of plugging in one fit. Here the posterior is
Laplace's approximation at the MAP fit: a Gaussian over the ``P`` raw
(unconstrained) parameters whose covariance is the inverse Hessian of the negative
log posterior (the marginal likelihood and the priors), the Hessian by central
differences of the gradient. The acquisition is

.. math::

    \\alpha(x) = \\log \\frac{1}{K} \\sum_{k=1}^{K} \\mathrm{EI}_k(x),

over the MAP model and ``DRAWS`` models drawn from the approximation.

Both steps run as one batched model (:class:`treebo.loop.stacking.ModelStack`): the
``2P`` gradients of the Hessian in one evaluation of a ``2P``-member stack, and the
``K`` models' EI in one posterior of a ``K``-member stack at ``b x K x 1 x d``
points. The cost is that of one fit's few steps, not ``K`` acquisitions.

``treebo_laplace_ei``: the default loop with this acquisition for its global
proposals and pool scoring (local steps and the step after a tie unchanged).
"""

from __future__ import annotations

import math

import torch
from botorch.acquisition import AcquisitionFunction, LogExpectedImprovement
from torch import Tensor

from treebo.add_tree import AddTreeStrategy
from treebo.add_tree.global_search import LogEISearch
from treebo.add_tree.model import AddTreeGP
from treebo.gp.exact_mll import PaddedMarginalLogLikelihood
from treebo.loop.stacking import ModelStack

from .treebo import PRESETS, register_preset

#: Models drawn from the Laplace approximation, beside the MAP model.
DRAWS = 7
#: Curvature below this (per raw parameter) is raised to it: a direction the
#: posterior does not bound gets a standard deviation of at most 1.
MIN_CURVATURE = 1.0
#: Step of the central differences, in raw units.
STEP = 1e-4


def _trainable(model: AddTreeGP) -> list[tuple[str, torch.nn.Parameter]]:
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def stacked_with(model: AddTreeGP, thetas: Tensor) -> torch.nn.Module:
    """``model`` stacked ``m`` times, member ``i`` with the raw trainable parameters
    ``thetas[i]`` (``m x P``, in ``model.named_parameters()`` order), in train
    mode (stacked from the model's original, untransformed training inputs)."""
    training = model.training
    model.train()
    try:
        batched = ModelStack(model).load([model] * thetas.shape[0])
    finally:
        model.train(training)
    own = dict(batched.named_parameters())
    offset = 0
    with torch.no_grad():
        for name, p in _trainable(model):
            size = p.numel()
            block = thetas[:, offset : offset + size].reshape(-1, *p.shape)
            own[name].copy_(block.to(own[name]))
            offset += size
    return batched


def log_posterior_gradients(model: AddTreeGP, thetas: Tensor) -> Tensor:
    """The gradients (``m x P``) of ``model``'s log posterior (marginal likelihood
    and priors) at ``m`` raw parameter vectors, in one batched evaluation."""
    batched = stacked_with(model, thetas)
    n = batched.train_targets.shape[-1]
    sizes = batched.train_targets.new_full((thetas.shape[0],), float(n))
    mll = PaddedMarginalLogLikelihood(batched.likelihood, batched, sizes)
    mll.train()
    names = [name for name, _ in _trainable(model)]
    own = dict(batched.named_parameters())
    output = batched(*batched.train_inputs)
    inputs = [batched.transform_inputs(X=x) for x in batched.train_inputs]
    values = mll(output, batched.train_targets, *inputs) * sizes
    wrt = [own[k] for k in names]
    grads = torch.autograd.grad(values.sum(), wrt, allow_unused=True)
    return torch.cat(
        [
            (torch.zeros_like(own[k]) if g is None else g).reshape(thetas.shape[0], -1)
            for k, g in zip(names, grads, strict=True)
        ],
        dim=-1,
    ).detach()


def laplace_thetas(model: AddTreeGP, k: int, seed: int) -> Tensor:
    """``k`` raw parameter vectors (``k x P``) drawn from Laplace's approximation
    of the hyper-parameters' posterior at ``model``'s (MAP) values."""
    theta = torch.cat([p.detach().reshape(-1) for _, p in _trainable(model)])
    eye = torch.eye(theta.numel(), dtype=theta.dtype, device=theta.device)
    shifted = torch.cat([theta + STEP * eye, theta - STEP * eye])
    grads = log_posterior_gradients(model, shifted)
    half = theta.numel()
    hessian = -(grads[:half] - grads[half:]) / (2 * STEP)  # of -log posterior
    hessian = (hessian + hessian.T) / 2
    values, vectors = torch.linalg.eigh(hessian)
    scale = vectors * values.clamp_min(MIN_CURVATURE).rsqrt()  # cov = S S^T
    generator = torch.Generator().manual_seed(seed)
    eps = torch.randn(k, half, generator=generator, dtype=theta.dtype)
    return theta + eps.to(theta) @ scale.T


class EnsembleLogEI(AcquisitionFunction):
    """``log(mean_k EI_k(x))`` over the ``K`` members of a stacked model.

    Args:
        model: A model with batch shape ``K`` (its members' hyper-parameters).
        best_f: The best score so far.
    """

    def __init__(self, model: torch.nn.Module, best_f: Tensor) -> None:
        super().__init__(model)
        self.members = model.train_targets.shape[0]
        self.log_ei = LogExpectedImprovement(model, best_f=best_f)

    def forward(self, X: Tensor) -> Tensor:
        """``b x 1 x d`` points -> ``b`` values."""
        each = X.unsqueeze(-3).expand(*X.shape[:-2], self.members, *X.shape[-2:])
        values = self.log_ei(each)  # b x K
        return torch.logsumexp(values, dim=-1) - math.log(self.members)


class LaplaceLogEISearch(LogEISearch):
    """LogEI integrated over Laplace draws of the hyper-parameters (plain LogEI
    where the draws' stack cannot be factorized)."""

    def acquisition(self, model: AddTreeGP, y: Tensor) -> AcquisitionFunction:
        seed = int(y.shape[-2])  # a new draw per proposal, reproducible
        try:
            theta = torch.cat([p.detach().reshape(-1) for _, p in _trainable(model)])
            thetas = torch.cat([theta[None], laplace_thetas(model, DRAWS, seed)])
            stacked = stacked_with(model, thetas)
            stacked.eval()
            acqf = EnsembleLogEI(stacked, best_f=y.max())
            acqf(model.train_inputs[0][:1].unsqueeze(-2))  # factorize now
            return acqf
        except (RuntimeError, ValueError):  # e.g. a Gram matrix that is not PD
            return super().acquisition(model, y)


if "treebo_laplace_ei" not in PRESETS:
    register_preset(
        "treebo_laplace_ei", lambda: AddTreeStrategy(search=LaplaceLogEISearch())
    )
