r"""What the user declares about an objective's noise, and the likelihood it implies.

``TreeOptimizer(..., noise=...)`` and ``minimize(..., noise=...)`` take one of:

- ``"infer"`` (the default): the noise variance is a hyper-parameter fitted with the
  model, under the log-normal prior of BoTorch's default likelihood (Hvarfner et al.,
  2024): $\log \sigma^2 \sim \mathcal N(-4, 1)$ on the standardized outcomes (median
  $e^{-4} \approx 0.018$, 95 % of its mass in $[0.0026, 0.13]$) and bounded below by
  `INFERRED_NOISE_FLOOR` $= 10^{-4}$. The data
  move the noise freely between the floor and the outcomes' variance: a smooth
  deterministic objective ends near the floor, a noisy one near its noise, and a
  step-shaped or tied surface is smoothed instead of interpolated.
- ``"deterministic"``: the objective returns the same value for the same
  configuration; the noise is bounded below by a floor of $10^{-6}$ only (what a
  strategy's own ``noise_floor`` says), so the model interpolates.
- A number $v \ge 0$: the noise variance of every evaluation, in the objective's units
  (``0`` means deterministic). ``tell(params, value, sem=s)`` overrides it for one
  evaluation with $s^2$, as Ax's standard error of the mean.

Example:
    >>> validate_noise("infer"), validate_noise(0.25), validate_noise(0)
    ('infer', 0.25, 'deterministic')
"""

from __future__ import annotations

import math
from typing import Any

import torch
from gpytorch.constraints import GreaterThan
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.priors import LogNormalPrior
from torch import Tensor

from treebo.gp.fit import noise_floor_likelihood
from treebo.space import ConfigurationError
from treebo.space.parameters import as_real_number

NOISE_MODES = ("infer", "deterministic")

#: Lower bound of an inferred noise variance on standardized outcomes (BoTorch's).
INFERRED_NOISE_FLOOR = 1e-4

#: The noise floor (standardized outcomes) where the objective is deterministic: low
#: enough to interpolate, high enough to factor.
DETERMINISTIC_NOISE_FLOOR = 1e-6

#: Location and scale of the log-normal prior of an inferred noise variance.
INFERRED_NOISE_PRIOR = (-4.0, 1.0)

Noise = str | float


def validate_noise(noise: Any, name: str = "noise") -> Noise:
    """``noise`` as ``"infer"``, ``"deterministic"`` or a positive variance.

    Raises:
        ConfigurationError: Naming ``name``, for anything else (a negative or
            non-finite number, another string, a bool).
    """
    if isinstance(noise, str):
        if noise not in NOISE_MODES:
            raise ConfigurationError(
                f"{name} must be one of {NOISE_MODES} or a noise variance >= 0, "
                f"got {noise!r}."
            )
        return noise
    try:
        variance = as_real_number(noise)
    except TypeError as err:
        raise ConfigurationError(
            f"{name} must be one of {NOISE_MODES} or a noise variance >= 0, got {err}."
        ) from None
    if not (math.isfinite(variance) and variance >= 0):
        raise ConfigurationError(
            f"{name} must be a finite noise variance >= 0, got {variance!r}."
        )
    return "deterministic" if variance == 0 else variance


def validate_sem(sem: Any, noise: Noise) -> float | None:
    """One evaluation's standard error, checked against the run's ``noise``.

    Raises:
        ConfigurationError: Naming ``sem``, if it is not a finite number ``>= 0``, or
            if the run infers its noise or declared it deterministic.
    """
    if sem is None:
        return None
    if isinstance(noise, str):
        raise ConfigurationError(
            f"sem: a standard error per evaluation needs a run with known noise "
            f"(noise=<variance>), this run has noise={noise!r}."
        )
    try:
        value = as_real_number(sem)
    except TypeError as err:
        raise ConfigurationError(f"sem must be a number >= 0, got {err}.") from None
    if not (math.isfinite(value) and value >= 0):
        raise ConfigurationError(f"sem must be a finite number >= 0, got {value!r}.")
    return value


def inferred_noise_likelihood(
    noise_floor: float = INFERRED_NOISE_FLOOR,
    batch_shape: torch.Size | None = None,
    prior: tuple[float, float] = INFERRED_NOISE_PRIOR,
) -> GaussianLikelihood:
    """A Gaussian likelihood whose noise is inferred (the ``"infer"`` mode above).

    Args:
        noise_floor: Lower bound on the noise variance of the standardized outcomes.
        batch_shape: Batch shape of the likelihood (default: none).
        prior: Location and scale of the log-normal prior of the noise variance.

    Example:
        >>> likelihood = inferred_noise_likelihood()
        >>> round(float(likelihood.noise.detach()), 4)  # starts at the prior's mode
        0.0067
    """
    if not noise_floor > 0:
        raise ValueError(f"noise_floor must be > 0, got {noise_floor}.")
    loc, scale = prior
    noise_prior = LogNormalPrior(loc=loc, scale=scale)
    return GaussianLikelihood(
        noise_prior=noise_prior,
        # The default softplus transform: the fit's raw parameter is about
        # log(noise) over the noise's range, which L-BFGS-B handles well; on the
        # noise itself (BoTorch's transform=None) fits of tied scores took about
        # seven times the iterations.
        noise_constraint=GreaterThan(
            noise_floor, initial_value=max(float(noise_prior.mode), 2 * noise_floor)
        ),
        batch_shape=torch.Size() if batch_shape is None else batch_shape,
    )


def default_noise_floor(noise: str) -> float:
    """The noise floor a declaration implies: `INFERRED_NOISE_FLOOR` where the noise
    is inferred, `DETERMINISTIC_NOISE_FLOOR` where it is deterministic or known.

    Example:
        >>> default_noise_floor("infer"), default_noise_floor("known")
        (0.0001, 1e-06)
    """
    return INFERRED_NOISE_FLOOR if noise == "infer" else DETERMINISTIC_NOISE_FLOOR


def declared_noise_likelihood(
    noise: str,
    noise_floor: float,
    train_Y: Tensor,
    train_Yvar: Tensor | None = None,
    prior: tuple[float, float] = INFERRED_NOISE_PRIOR,
) -> tuple[GaussianLikelihood | None, Tensor | None]:
    """What a GP of ``train_Y`` takes for a run's noise declaration: a likelihood, or
    known noise variances (BoTorch's ``train_Yvar``); the other is ``None``.

    - ``"infer"``:
      [`inferred_noise_likelihood()`][treebo.gp.noise.inferred_noise_likelihood]
      above ``noise_floor`` with ``prior``;
    - ``"deterministic"``, or known noise without variances:
      [`noise_floor_likelihood()`][treebo.gp.fit.noise_floor_likelihood];
    - known noise: ``train_Yvar`` clamped to at least ``noise_floor``, with rows of
      ``train_Y`` beyond it (believed pending configurations) at ``noise_floor``.

    Args:
        noise: ``Observations.noise``: ``"infer"``, ``"deterministic"`` or
            ``"known"``.
        noise_floor: Lower bound on the noise variance of the standardized outcomes.
        train_Y: ``n x 1`` training targets.
        train_Yvar: ``m x 1`` known noise variances of the first ``m <= n`` targets.
        prior: The inferred noise's log-normal prior (location, scale).

    Example:
        >>> import torch
        >>> Y = torch.zeros(3, 1, dtype=torch.float64)
        >>> Yvar = torch.tensor([[0.5], [0.0]], dtype=torch.float64)
        >>> likelihood, variances = declared_noise_likelihood("known", 1e-6, Y, Yvar)
        >>> likelihood is None, variances.squeeze(-1).tolist()
        (True, [0.5, 1e-06, 1e-06])
    """
    if noise == "infer":
        return inferred_noise_likelihood(noise_floor, prior=prior), None
    if noise == "deterministic" or train_Yvar is None:
        return noise_floor_likelihood(noise_floor), None
    yvar = train_Y.new_full(train_Y.shape, noise_floor)
    known = train_Yvar.to(train_Y)[: train_Y.shape[0]]
    yvar[: known.shape[0]] = known.clamp_min(noise_floor)
    return None, yvar
