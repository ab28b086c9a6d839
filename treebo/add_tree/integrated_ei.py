r"""LogEI integrated over the hyper-parameters' posterior (Laplace's approximation).

A MAP fit plugs one set of hyper-parameters into the acquisition. On step-shaped
data (a tree ensemble's surrogate, an accuracy on a small validation set) the
marginal likelihood is flat and multimodal, and the MAP fit is sure of one mode: a
short lengthscale that explains the last jump, or a long one that calls a region
resolved. Snoek et al. (2012) average expected improvement over the
hyper-parameters' posterior instead; here the posterior is Laplace's approximation
at the MAP fit, a Gaussian over the ``P`` raw (unconstrained) parameters $\theta$,

$$
\theta \sim \mathcal N\big(\hat\theta, H^{-1}\big), \qquad
H = -\nabla^2_\theta \big(\log p(y \mid \theta) + \log p(\theta)\big)
\big|_{\hat\theta},
$$

with each eigenvalue of $H$ raised to at least ``MIN_CURVATURE`` (a direction the
data do not bound gets a standard deviation of at most 1 in raw units). The
acquisition is the log of the mean EI over the MAP model and $K - 1$ draws,

$$
\alpha(x) = \log \frac{1}{K} \sum_{k=1}^{K} \mathrm{EI}_{\theta_k}(x),
\qquad \theta_1 = \hat\theta.
$$

Both steps are batched ([`ModelStack`][treebo.gp.stacking.ModelStack]): $H$ by
forward differences of the gradient, the ``P + 1`` gradients in one evaluation of a
``(P + 1)``-member stack (in chunks at large ``n``); the ``K`` models' EI in one
posterior of a ``K``-member stack at ``b x K x 1 x d`` points. A proposal costs about
what a few steps of the fit cost, not ``K`` acquisitions.

Example:
    >>> from treebo import TreeOptimizer
    >>> from treebo.add_tree import AddTreeStrategy
    >>> from treebo.test_functions import Jenatton
    >>> problem = Jenatton()
    >>> opt = TreeOptimizer(problem.space, seed=0)
    >>> for params in problem.space.to_dicts(problem.space.sample(8, seed=1)):
    ...     _ = opt.tell(params, problem.objective(params))
    >>> model = opt.strategy.fit(opt.observations())
    >>> y = opt.observations().y
    >>> acqf = IntegratedLogEISearch().acquisition(model, y)
    >>> acqf(problem.space.sample(3, seed=2).unsqueeze(-2)).shape
    torch.Size([3])
"""

from __future__ import annotations

import logging
import math

import torch
from botorch.acquisition import AcquisitionFunction, LogExpectedImprovement
from torch import Tensor

from treebo.add_tree.global_search import LogEISearch
from treebo.add_tree.model import AddTreeGP
from treebo.add_tree.options import AddTreeOptions
from treebo.gp.exact_mll import PaddedMarginalLogLikelihood
from treebo.gp.stacking import ModelStack

logger = logging.getLogger(__name__)

#: Models in the ensemble: the MAP model and draws from the approximation.
MEMBERS = 8
#: Curvature below this (per raw parameter) is raised to it.
MIN_CURVATURE = 1.0
#: Step of the forward differences, in raw units.
STEP = 1e-4
#: Kernel-matrix entries (members x n x n) per batched gradient evaluation.
CHUNK_ENTRIES = 2**22


def _trainable(model: torch.nn.Module) -> list[tuple[str, torch.nn.Parameter]]:
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def raw_hyperparameters(model: torch.nn.Module) -> Tensor:
    """``model``'s trainable raw parameters as one vector ``P``."""
    return torch.cat([p.detach().reshape(-1) for _, p in _trainable(model)])


def stacked_with(model: torch.nn.Module, thetas: Tensor) -> torch.nn.Module:
    """``model`` stacked ``m`` times, member ``i`` with the raw trainable parameters
    ``thetas[i]`` (``m x P``, in ``model.named_parameters()`` order), in train mode.

    The stack is built from the model's original (untransformed) training inputs;
    ``model`` is left as it was.
    """
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
            block = thetas[:, offset : offset + p.numel()].reshape(-1, *p.shape)
            own[name].copy_(block.to(own[name]))
            offset += p.numel()
    return batched


def log_posterior_gradients(model: torch.nn.Module, thetas: Tensor) -> Tensor:
    """The gradients (``m x P``) of ``model``'s log posterior (the marginal
    likelihood and the priors) at ``m`` raw parameter vectors ``thetas``
    (``m x P``), batched in chunks of at most `CHUNK_ENTRIES` kernel entries."""
    n = model.train_targets.shape[-1]
    chunk = max(1, CHUNK_ENTRIES // (n * n))
    return torch.cat([_gradients(model, part) for part in thetas.split(chunk)])


def _gradients(model: torch.nn.Module, thetas: Tensor) -> Tensor:
    batched = stacked_with(model, thetas)
    m, n = thetas.shape[0], batched.train_targets.shape[-1]
    sizes = batched.train_targets.new_full((m,), float(n))
    mll = PaddedMarginalLogLikelihood(batched.likelihood, batched, sizes)
    mll.train()
    own = dict(batched.named_parameters())
    wrt = [own[name] for name, _ in _trainable(model)]
    output = batched(*batched.train_inputs)
    inputs = [batched.transform_inputs(X=x) for x in batched.train_inputs]
    values = mll(output, batched.train_targets, *inputs) * sizes
    grads = torch.autograd.grad(values.sum(), wrt, allow_unused=True)
    return torch.cat(
        [
            (torch.zeros_like(p) if g is None else g).reshape(m, -1)
            for p, g in zip(wrt, grads, strict=True)
        ],
        dim=-1,
    ).detach()


def laplace_draws(model: torch.nn.Module, k: int, seed: int) -> Tensor:
    """``k`` raw parameter vectors (``k x P``) drawn from Laplace's approximation of
    the hyper-parameters' posterior at ``model``'s (MAP) values.

    Args:
        model: A fitted exact GP with one output.
        k: The number of draws.
        seed: Seed of the draws' normal deviates.
    """
    theta = raw_hyperparameters(model)
    P = theta.numel()
    eye = torch.eye(P, dtype=theta.dtype, device=theta.device)
    grads = log_posterior_gradients(model, torch.cat([theta[None], theta + STEP * eye]))
    hessian = -(grads[1:] - grads[:1]) / STEP
    hessian = (hessian + hessian.T) / 2
    values, vectors = torch.linalg.eigh(hessian)
    # The symmetric square root of the covariance, S = V diag(lambda^-1/2) V^T:
    # unique, so the draws do not depend on the basis eigh picks within (near-)
    # equal eigenvalues, and a round-off's change of H changes them by round-off.
    scale = (vectors * values.clamp_min(MIN_CURVATURE).rsqrt()) @ vectors.T
    generator = torch.Generator().manual_seed(seed)
    eps = torch.randn(k, P, generator=generator, dtype=theta.dtype)
    return theta + eps.to(theta) @ scale.T


class EnsembleLogEI(AcquisitionFunction):
    r"""$\log \frac1K \sum_k \mathrm{EI}_k(x)$ over the ``K`` members of a stacked
    model.

    Args:
        model: An exact GP with batch shape ``K`` (one member per set of
            hyper-parameters) in eval mode.
        best_f: The best score so far.
    """

    def __init__(self, model: torch.nn.Module, best_f: Tensor | float) -> None:
        super().__init__(model)
        self.members = int(model.train_targets.shape[0])
        self.log_ei = LogExpectedImprovement(model, best_f=best_f)

    def forward(self, X: Tensor) -> Tensor:
        """``b x 1 x d`` points -> ``b`` values."""
        each = X.unsqueeze(-3).expand(*X.shape[:-2], self.members, *X.shape[-2:])
        values = self.log_ei(each)  # b x K
        return torch.logsumexp(values, dim=-1) - math.log(self.members)


class IntegratedLogEISearch(LogEISearch):
    """The global search with LogEI integrated over Laplace draws of the
    hyper-parameters (module docstring); plain LogEI where the draws' stack
    cannot be factorized.

    Args:
        num_restarts: L-BFGS-B starts.
        raw_samples: Random points scored to choose the starts.
        members: ``K``, the MAP model and ``K - 1`` draws (1: plain LogEI).

    Example:
        >>> IntegratedLogEISearch(members=4).members
        4
    """

    def __init__(
        self, num_restarts: int = 10, raw_samples: int = 512, members: int = MEMBERS
    ) -> None:
        super().__init__(num_restarts, raw_samples)
        if isinstance(members, bool) or not isinstance(members, int) or members < 1:
            raise ValueError(f"members must be a positive integer, got {members!r}.")
        self.members = members

    @classmethod
    def from_options(cls, options: AddTreeOptions) -> IntegratedLogEISearch:
        """The search of ``options``' restarts and raw samples."""
        return cls(options.num_restarts, options.raw_samples)

    def acquisition(self, model: AddTreeGP, y: Tensor) -> AcquisitionFunction:
        """LogEI integrated over ``members`` models of ``model``'s hyper-parameter
        posterior; the draws are seeded by the number of scores ``y`` (``n x 1``),
        so a resumed run draws the same."""
        if self.members == 1:
            return super().acquisition(model, y)
        try:
            draws = laplace_draws(model, self.members - 1, seed=int(y.shape[-2]))
            thetas = torch.cat([raw_hyperparameters(model)[None], draws])
            stacked = stacked_with(model, thetas)
            stacked.eval()
            acqf = EnsembleLogEI(stacked, best_f=y.max())
            with torch.no_grad():  # factorize now: a failure falls back here
                acqf(model.train_inputs[0][:1].unsqueeze(-2))
            return acqf
        except (RuntimeError, ValueError) as err:  # e.g. a Gram matrix not PD
            logger.debug("integrated LogEI fell back to the MAP fit's: %s", err)
            return super().acquisition(model, y)
