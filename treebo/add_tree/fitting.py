r"""The global model of a proposal: an ``AddTreeGP`` for the run's noise, fitted.

[`AddTreeFit`][treebo.add_tree.fitting.AddTreeFit] is the Add-Tree strategies' fitter
part. It builds an [`AddTreeGP`][treebo.add_tree.model.AddTreeGP] whose likelihood
follows the observations' noise declaration
([`declared_noise_likelihood()`][treebo.gp.noise.declared_noise_likelihood]), fits it
from the last fit's hyper-parameters
([`WarmStartFit`][treebo.strategies.fitting.WarmStartFit]) and, where alternative
kernels are set, keeps an alternative's model only where it predicts the data clearly
better in leave-one-out ([`predicts_better()`][treebo.gp.fit.predicts_better]).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from botorch.exceptions import ModelFittingError
from torch import Tensor

from treebo.add_tree.model import AddTreeGP
from treebo.add_tree.options import (
    AddTreeKernelOptions,
    AddTreeOptions,
    AddTreeUCBOptions,
    distinct_kernel,
)
from treebo.gp.fit import loo_log_densities, predicts_better
from treebo.gp.noise import (
    INFERRED_NOISE_PRIOR,
    declared_noise_likelihood,
    default_noise_floor,
)
from treebo.strategies.base import Observations
from treebo.strategies.fitting import WarmStartFit


class AddTreeFit:
    r"""Builds and fits the global [`AddTreeGP`][treebo.add_tree.model.AddTreeGP].

    Each kernel setting has its own warm-started fitter; ``kernel`` is the model in
    use until an alternative predicts the data clearly better. The last chosen
    setting (`kernel_in_use`) is what
    [`build()`][treebo.add_tree.fitting.AddTreeFit.build] uses by default, so that a
    model rebuilt on more rows (believed pending configurations) is the fitted one's.

    Args:
        kernel: The main kernel's settings.
        alternatives: Further kernel settings fitted beside it.
        noise_floor: Lower bound on the noise variance of the standardized
            outcomes; ``None``: by the run's declaration
            ([`default_noise_floor()`][treebo.gp.noise.default_noise_floor]).
        make_fitter: Returns a fresh fitter (one per kernel setting).
        noise_prior: Location and scale of the log-normal prior of an inferred noise
            variance.

    Example:
        >>> from treebo import TreeOptimizer
        >>> from treebo.add_tree.options import LOOP_KERNEL_OPTIONS
        >>> from treebo.test_functions import Jenatton
        >>> problem = Jenatton()
        >>> opt = TreeOptimizer(problem.space, seed=0)
        >>> for params in problem.space.to_dicts(problem.space.sample(8, seed=0)):
        ...     _ = opt.tell(params, problem.objective(params))
        >>> model = AddTreeFit(LOOP_KERNEL_OPTIONS).fit(opt.observations())
        >>> model.train_inputs[0].shape
        torch.Size([8, 9])
    """

    def __init__(
        self,
        kernel: AddTreeKernelOptions,
        alternatives: Sequence[AddTreeKernelOptions] = (),
        noise_floor: float | None = None,
        make_fitter: Callable[[], WarmStartFit] = WarmStartFit,
        noise_prior: tuple[float, float] = INFERRED_NOISE_PRIOR,
    ) -> None:
        self.kernel = kernel
        self.alternatives = tuple(alternatives)
        self.fixed_noise_floor = noise_floor
        self.noise_prior = noise_prior
        self.fitter = make_fitter()
        self.alternative_fitters = [make_fitter() for _ in self.alternatives]
        self.kernel_in_use = kernel

    @classmethod
    def from_options(
        cls, options: AddTreeOptions | AddTreeUCBOptions, **kwargs: Any
    ) -> AddTreeFit:
        """The fitter of ``options``' kernel, alternatives and noise floor
        (``kwargs``: ``make_fitter``, ``noise_prior``)."""
        return cls(
            options.kernel, options.alternatives(), options.noise_floor, **kwargs
        )

    def noise_floor(self, noise: str) -> float:
        """The noise floor for a run's declaration ``noise``."""
        if self.fixed_noise_floor is not None:
            return self.fixed_noise_floor
        return default_noise_floor(noise)

    def build(
        self,
        observations: Observations,
        X: Tensor,
        y: Tensor,
        noise_floor: float,
        kernel: AddTreeKernelOptions | None = None,
    ) -> AddTreeGP:
        """An unfitted model of ``X``, ``y`` (``n x d``, ``n x 1``) on
        ``observations``' space, with their noise declaration and known variances, and
        the settings ``kernel`` (default `kernel_in_use`)."""
        kernel = self.kernel_in_use if kernel is None else kernel
        likelihood, yvar = declared_noise_likelihood(
            observations.noise, noise_floor, y, observations.yvar, self.noise_prior
        )
        space = observations.space
        return AddTreeGP(
            X,
            y,
            space.tree,
            train_Yvar=yvar,
            bounds=space.bounds.to(X),
            categorical_values=space.categorical_values,
            likelihood=likelihood,
            **kernel.as_kwargs(),
        ).to(X)

    def rebuild(self, observations: Observations) -> Callable[..., AddTreeGP]:
        """``(X, y, noise_floor) -> model``: the model in use, unfitted, on other rows
        (what [`believe_pending()`][treebo.strategies.believer.believe_pending]
        takes)."""
        return lambda X, y, floor: self.build(observations, X, y, floor)

    def fit(self, observations: Observations) -> AddTreeGP:
        """The model of ``kernel`` fitted to the finished evaluations, or of an
        alternative that predicts them clearly better in leave-one-out (by more than
        one standard error of the paired per-point gains). An alternative's first fit
        starts from the main model's (its terms plus interactions: the same optimum in
        a third to a half of the evaluations, measured at 15 to 1000 points)."""
        X, y = observations.X, observations.y
        floor = self.noise_floor(observations.noise)

        def builder(kernel: AddTreeKernelOptions) -> Callable[[float], AddTreeGP]:
            return lambda f: self.build(observations, X, y, f, kernel)

        model = self.fitter.fit(builder(self.kernel), floor)
        chosen = self.kernel
        alternatives = [
            (kernel, fitter)
            for kernel, fitter in zip(
                self.alternatives, self.alternative_fitters, strict=True
            )
            if distinct_kernel(kernel, self.kernel, observations.space)
        ]
        try:
            best = loo_log_densities(model) if alternatives else None
        except RuntimeError:  # nothing to compare against: keep the main model
            best = None
        for kernel, fitter in alternatives if best is not None else ():
            if fitter.state is None and self.fitter.state is not None:
                fitter.state = dict(self.fitter.state)  # nested: start from main
            try:
                other = fitter.fit(builder(kernel), floor)
                densities = loo_log_densities(other)
            except (ModelFittingError, RuntimeError):  # keep what fitted
                continue
            if predicts_better(densities, best):
                model, chosen, best = other, kernel, densities
        self.kernel_in_use = chosen
        return model

    def state_dict(self) -> dict[str, Any]:
        """The fitters' last hyper-parameters (JSON-ready)."""
        state = {"hyperparameters": self.fitter.state_dict()}
        if self.alternative_fitters:
            state["alternatives"] = [f.state_dict() for f in self.alternative_fitters]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore [`state_dict()`][treebo.add_tree.fitting.AddTreeFit.state_dict]'s
        output."""
        self.fitter.load_state_dict(state.get("hyperparameters", {}))
        saved = state.get("alternatives", [{}] * len(self.alternative_fitters))
        for fitter, entry in zip(self.alternative_fitters, saved, strict=True):
            fitter.load_state_dict(entry)
