r"""Hyper-parameter fitting for exact GPs, and the leave-one-out predictive density.

[`fit_model()`][treebo.gp.fit.fit_model] maximizes an objective of the model's
hyper-parameters, by default the log marginal likelihood (BoTorch's), computed from one
Cholesky factor
([`CholeskyMarginalLogLikelihood`][treebo.gp.exact_mll.CholeskyMarginalLogLikelihood]).
Another objective is injected as a class, e.g. GPyTorch's
``LeaveOneOutPseudoLikelihood``: the leave-one-out predictive log likelihood
(Rasmussen & Williams 2006, Sec. 5.4.2),

$$
\frac{1}{n}\sum_{i=1}^n \log p(y_i \mid X, y_{-i}, \theta)
= \frac{1}{n}\sum_i \Big(-\tfrac12 \log \sigma_i^2
  - \frac{(y_i - \mu_i)^2}{2 \sigma_i^2}\Big) - \tfrac12 \log 2\pi,
\quad \sigma_i^2 = 1 / [K^{-1}]_{ii},\;
\mu_i = y_i - [K^{-1} y]_i \, \sigma_i^2,
$$

scores hyper-parameters by how well each point is predicted from the others. The loop
fits by the marginal likelihood and uses the per-point leave-one-out densities
([`loo_log_densities()`][treebo.gp.fit.loo_log_densities]) to choose between kernels
([`predicts_better()`][treebo.gp.fit.predicts_better]).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models.model import Model
from gpytorch.constraints import GreaterThan
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.mlls import MarginalLogLikelihood
from gpytorch.priors import LogNormalPrior
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from treebo.gp.exact_mll import CholeskyMarginalLogLikelihood

#: ``closure(mll) -> BoTorch loss closure`` or ``None``: how
#: [`fit_model()`][treebo.gp.fit.fit_model] evaluates its objective in the current
#: context. ``None`` (the default) evaluates it alone; a runner of many runs sets it
#: in each run's context to evaluate many runs' objectives as one batch
#: ([`run_in_lockstep()`][treebo.loop.lockstep.run_in_lockstep]).
objective_closure: ContextVar[Callable[[MarginalLogLikelihood], Callable] | None] = (
    ContextVar("objective_closure", default=None)
)


class NoiseFloorLikelihood(GaussianLikelihood):
    """A Gaussian likelihood whose noise variance is bounded below by ``noise_floor``.

    The noise prior is log-normal with its median at ``e^2 * noise_floor`` and a
    log-scale of 2, so the data can move the noise freely above the floor.
    BoTorch's default floor (``1e-4`` on standardized outcomes) limits how well
    a deterministic objective can be fitted; a floor of ``1e-6`` suits those.
    Its only setting is a number, so frameworks that store a likelihood's
    class and options (Ax's JSON storage) can save it.

    Args:
        noise_floor: Lower bound on the noise variance (``> 0``), in the units of
            the model's (transformed) outcomes.
        batch_shape: Batch shape of the likelihood (default: none).

    Example:
        >>> likelihood = NoiseFloorLikelihood(1e-6)
        >>> likelihood.noise_floor, type(likelihood.noise_covar.raw_noise_constraint)
        (1e-06, <class 'gpytorch.constraints.constraints.GreaterThan'>)
    """

    def __init__(
        self, noise_floor: float = 1e-6, batch_shape: torch.Size | None = None
    ) -> None:
        super().__init__(
            **noise_floor_likelihood_options(noise_floor),
            batch_shape=torch.Size() if batch_shape is None else batch_shape,
        )
        self.noise_floor = noise_floor


def noise_floor_likelihood(
    noise_floor: float, batch_shape: torch.Size | None = None
) -> GaussianLikelihood:
    """A [`NoiseFloorLikelihood`][treebo.gp.fit.NoiseFloorLikelihood] (arguments as
    its)."""
    return NoiseFloorLikelihood(noise_floor, batch_shape)


def noise_floor_likelihood_options(noise_floor: float) -> dict[str, Any]:
    """``GaussianLikelihood`` keyword arguments of
    [`NoiseFloorLikelihood`][treebo.gp.fit.NoiseFloorLikelihood].

    For code that builds a ``GaussianLikelihood`` (or a subclass) itself; a framework
    that stores the likelihood's options (Ax's
    ``ModelConfig(likelihood_class=..., likelihood_options=...)``) takes
    [`NoiseFloorLikelihood`][treebo.gp.fit.NoiseFloorLikelihood] with
    ``{"noise_floor": ...}`` instead.

    Returns:
        ``{"noise_prior": ..., "noise_constraint": ...}``.
    """
    if not noise_floor > 0:
        raise ValueError(f"noise_floor must be > 0, got {noise_floor}.")
    return {
        "noise_prior": LogNormalPrior(loc=math.log(noise_floor) + 2.0, scale=2.0),
        "noise_constraint": GreaterThan(noise_floor),
    }


def fit_model(
    model: Model,
    mll_class: type[MarginalLogLikelihood] = CholeskyMarginalLogLikelihood,
    **fit_kwargs: Any,
) -> Model:
    """Fit an exact GP's hyper-parameters and return it in eval mode.

    Args:
        model: An exact GP with a Gaussian likelihood (e.g. ``AddTreeGP``).
        mll_class: The objective, built as ``mll_class(model.likelihood, model)``:
            the log marginal likelihood by default, or e.g. GPyTorch's
            ``LeaveOneOutPseudoLikelihood`` (module docstring; it leaves a constant
            mean weakly determined, so predictions far from the data can drift).
            Either adds the log densities of the model's priors.
        **fit_kwargs: Passed to `botorch.fit.fit_gpytorch_mll()` (e.g.
            ``optimizer_kwargs``); its retries with fresh draws from the priors
            apply to any objective. Where `objective_closure` is set (inside
            [`run_in_lockstep()`][treebo.loop.lockstep.run_in_lockstep]) the
            objective's evaluations go through its closure, batched with other
            runs'.

    Returns:
        The fitted model, in eval mode.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> from gpytorch.mlls import LeaveOneOutPseudoLikelihood
        >>> X = torch.rand(12, 1, dtype=torch.float64)
        >>> model = SingleTaskGP(X, torch.sin(6 * X))
        >>> fit_model(model, LeaveOneOutPseudoLikelihood).training
        False
    """
    if not (
        isinstance(mll_class, type) and issubclass(mll_class, MarginalLogLikelihood)
    ):
        raise TypeError(
            f"mll_class must be a MarginalLogLikelihood class, got {mll_class!r}."
        )
    objective = mll_class(model.likelihood, model)
    closure = objective_closure.get()
    if closure is not None and "closure" not in fit_kwargs:
        fit_kwargs = {**fit_kwargs, "closure": closure(objective)}
    fit_gpytorch_mll(objective, **fit_kwargs)
    return model.eval()


def loo_log_densities(model: Model) -> Tensor:
    r"""Leave-one-out log predictive density of each training point.

    $\log p(y_i \mid X, y_{-i}, \theta)$ of the module docstring, without priors, at the
    model's current hyper-parameters (closed form: one Cholesky factorization).

    Args:
        model: An exact GP with a Gaussian likelihood and one output.

    Returns:
        ``batch_shape x n`` log densities.

    Raises:
        NotPSDError: If the covariance cannot be factored even with jitter.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> X = torch.rand(12, 1, dtype=torch.float64)
        >>> model = fit_model(SingleTaskGP(X, torch.sin(6 * X)))
        >>> loo_log_densities(model).shape[-1]
        12
    """
    X, y = model.train_inputs[0], model.train_targets
    with torch.no_grad():
        prior = model.forward(X)
        noise = model.likelihood.noise.expand(y.shape)
        K = prior.covariance_matrix + torch.diag_embed(noise)
        # Jitter where a noise floor leaves K numerically singular.
        precision = torch.cholesky_inverse(psd_safe_cholesky(K))
        weights = (precision @ (y - prior.mean).unsqueeze(-1)).squeeze(-1)
        diag = precision.diagonal(dim1=-2, dim2=-1)
        # sigma_i^2 = 1 / diag_i, y_i - mu_i = weights_i / diag_i.
        log_density = 0.5 * diag.log() - 0.5 * weights.square() / diag
        return log_density - 0.5 * math.log(2 * math.pi)


def loo_log_predictive(model: Model) -> Tensor:
    r"""Mean leave-one-out log predictive density of a fitted exact GP's data
    (the mean of [`loo_log_densities()`][treebo.gp.fit.loo_log_densities]): how well
    each training point is predicted from the others.

    Args:
        model: An exact GP with a Gaussian likelihood and one output.

    Returns:
        A 0-dimensional tensor (batch-shaped for batched models).

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> X = torch.linspace(0, 1, 12, dtype=torch.float64).unsqueeze(-1)
        >>> model = fit_model(SingleTaskGP(X, torch.sin(6 * X)))
        >>> bool(loo_log_predictive(model) > 0)
        True
    """
    return loo_log_densities(model).mean(-1)


def predicts_better(candidate: Tensor, incumbent: Tensor, z: float = 1.0) -> bool:
    r"""Whether leave-one-out densities show a model to predict better than another.

    With $d_i$ the per-point differences of ``candidate`` and ``incumbent``
    ([`loo_log_densities()`][treebo.gp.fit.loo_log_densities] of two models on the same
    data), the candidate wins if $\bar d > z\,s_d / \sqrt n$: its mean gain exceeds
    ``z`` standard errors (a paired test; with ``z = 1`` the one-standard-error rule). A
    more flexible model fitted to the same data scores a little higher by chance; it
    must do so clearly.

    Args:
        candidate: ``n`` log densities of the candidate model.
        incumbent: ``n`` log densities of the incumbent, at the same points.
        z: Standard errors the mean gain must exceed.

    Example:
        >>> a = torch.tensor([1.0, 1.2, 0.9, 1.1])
        >>> noisy_gain = torch.tensor([1.0, -1.0, 0.5, -0.3])
        >>> predicts_better(a + 0.5, a), predicts_better(a + noisy_gain, a)
        (True, False)
    """
    diff = (candidate - incumbent).reshape(-1)
    n = diff.numel()
    if n < 2:
        return bool(diff.sum() > 0)
    return bool(diff.mean() > z * diff.std() / math.sqrt(n))
