"""Warm-started model fits with noise-floor retries, and their checkpoint state."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from botorch.exceptions import ModelFittingError
from botorch.models.model import Model
from gpytorch.mlls import MarginalLogLikelihood

from treebo.gp.exact_mll import CholeskyMarginalLogLikelihood
from treebo.gp.fit import fit_model

#: Noise floors tried in turn, as multiples of the requested one.
FLOOR_RETRIES = (1.0, 100.0, 1e4)


class WarmStartFit:
    """Fits models of one family in a row, each from the last one's
    hyper-parameters.

    A fit that fails (a Cholesky error, a non-finite loss or non-finite
    hyper-parameters) is retried from the model's defaults with the noise floor raised
    100-fold, then 10,000-fold. The raw hyper-parameters of the last fit are kept and
    are what [`state_dict()`][treebo.strategies.fitting.WarmStartFit.state_dict]
    returns, so a resumed run starts its next fit where the uninterrupted run would
    have.

    Args:
        warm_start: Start each fit from the previous hyper-parameters.
        mll_class: The objective the fits maximize (see
            [`fit_model()`][treebo.gp.fit.fit_model]; default the log marginal
            likelihood).
        **fit_kwargs: Passed to [`fit_model()`][treebo.gp.fit.fit_model] (e.g.
            ``optimizer_kwargs={"options": {"maxiter": 50}}``).

    Example:
        >>> from treebo.add_tree import AddTreeGP
        >>> from treebo.gp import noise_floor_likelihood
        >>> from treebo.test_functions import Jenatton
        >>> problem = Jenatton()
        >>> deps = problem.space.to_hierarchical_dependencies()
        >>> def build(X, floor):
        ...     Y = problem(X).unsqueeze(-1)
        ...     return AddTreeGP(X, Y, deps, likelihood=noise_floor_likelihood(floor))
        >>> fitter = WarmStartFit()
        >>> X = problem.space.sample(13, seed=0)
        >>> first = fitter.fit(lambda floor: build(X[:12], floor), 1e-6)
        >>> state = fitter.state_dict()  # JSON-ready: what a checkpoint stores
        >>> second = fitter.fit(lambda floor: build(X, floor), 1e-6)  # warm
        >>> sorted(state) == sorted(fitter.state_dict())
        True
    """

    def __init__(
        self,
        warm_start: bool = True,
        mll_class: type[MarginalLogLikelihood] = CholeskyMarginalLogLikelihood,
        **fit_kwargs: Any,
    ) -> None:
        self.warm_start = warm_start
        self.mll_class = mll_class
        self.fit_kwargs = fit_kwargs
        self.state: dict[str, torch.Tensor] | None = None

    def fit(self, build: Callable[[float], Model], noise_floor: float) -> Model:
        """Build (``build(noise_floor) -> model``), warm-start and fit a model.

        Returns:
            The fitted model in eval mode.

        Raises:
            ModelFittingError: If every retry failed.
        """
        last_error: Exception | None = None
        for attempt, factor in enumerate(FLOOR_RETRIES):
            model = build(noise_floor * factor)
            if self.warm_start and self.state is not None and attempt == 0:
                try:
                    model.load_state_dict(self.state, strict=False)
                except RuntimeError:  # shapes changed: fit from the defaults
                    pass
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fit_model(model, self.mll_class, **self.fit_kwargs)
                if not all(bool(t.isfinite().all()) for t in model.parameters()):
                    raise ModelFittingError("the fit ended at non-finite values")
                break
            except (ModelFittingError, RuntimeError, ValueError) as err:
                last_error = err
        else:
            raise ModelFittingError(f"could not fit the model: {last_error}")
        model.eval()
        self.state = raw_hyperparameters(model)
        return model

    def state_dict(self) -> dict[str, Any]:
        """The last fit's raw hyper-parameters as nested lists (JSON-ready)."""
        if self.state is None:
            return {}
        return {
            name: {"shape": list(t.shape), "values": t.flatten().tolist()}
            for name, t in self.state.items()
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore [`state_dict()`][treebo.strategies.fitting.WarmStartFit.state_dict]'s
        output (exactly: floats round-trip)."""
        self.state = {
            name: torch.tensor(entry["values"], dtype=torch.float64).reshape(
                entry["shape"]
            )
            for name, entry in state.items()
        } or None


def raw_hyperparameters(model: Model) -> dict[str, torch.Tensor]:
    """Detached copies of a model's raw (unconstrained) hyper-parameters."""
    return {k: v.detach().clone() for k, v in model.state_dict().items() if "raw_" in k}
