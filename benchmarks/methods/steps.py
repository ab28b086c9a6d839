"""Step-shaped surfaces (issue 68): variants of the default loop under study.

=====================  ===========================================================
``treebo_steps``       the default loop that, once two successful evaluations at
                       configurations differing in a real parameter return exactly
                       the same value (a plateau of a continuous parameter), stops
                       local steps and the exploring step after a tie
``treebo_no_alt``      the default loop without the interaction-term alternative
``treebo_alt_plain``   the default loop with Definition 4's kernel (nothing
                       shared, no offsets) as a second leave-one-out alternative
``treebo_two_start``   the default loop whose every fit runs from the last fit's
                       hyper-parameters and from the defaults, keeping the one of
                       higher objective (against lock-in of a warm start)
=====================  ===========================================================

Registered as presets of :mod:`benchmarks.methods.treebo` on import.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from treebo.add_tree import AddTreeOptions, AddTreeStrategy
from treebo.add_tree.fitting import AddTreeFit
from treebo.add_tree.options import LOOP_KERNEL_OPTIONS, AddTreeKernelOptions
from treebo.add_tree.strategy import explores_after_tie
from treebo.strategies.base import Observations, Proposal
from treebo.strategies.fitting import WarmStartFit

from .treebo import PRESETS, register_preset


def has_real_plateau(observations: Observations) -> bool:
    """Whether two successful trials whose configurations differ in a real
    column tie exactly (above the lowest score, which the outcome fence and
    failures share)."""
    real = observations.space.real_columns
    if not real:
        return False
    ok = ~observations.failed
    y = observations.y.squeeze(-1)[ok]
    X = observations.X[ok][:, real]
    if y.numel() < 2:
        return False
    keep = y > y.min()
    y, X = y[keep], X[keep]
    same_value = y.unsqueeze(0) == y.unsqueeze(1)
    differ = (X.unsqueeze(0) != X.unsqueeze(1)).any(-1)
    return bool((same_value & differ).any())


def explores_off_plateaus(observations: Observations) -> bool:
    """The exploring step after a tie, except on a run with a real plateau."""
    if has_real_plateau(observations):
        return False
    return explores_after_tie(observations)


class StepAware(AddTreeStrategy):
    """The default loop, with local steps and the exploring step after a tie
    turned off on a run whose real parameters show a plateau."""

    name = "add_tree_steps"

    def __init__(self, options: Any = None) -> None:
        super().__init__(options, explore=explores_off_plateaus)

    def propose(self, observations: Observations) -> Proposal:
        plateau = has_real_plateau(observations)
        local, self.local = self.local, None if plateau else self.local
        try:
            return super().propose(observations)
        finally:
            self.local = local


def fitted_objective(model: Any, mll_class: type) -> float:
    """The objective a fit maximized (marginal likelihood plus the priors'
    log densities) at the model's hyper-parameters."""
    model.train()
    try:
        mll = mll_class(model.likelihood, model)
        with torch.no_grad():
            return float(mll(model(*model.train_inputs), model.train_targets).sum())
    finally:
        model.eval()


class TwoStartFit(WarmStartFit):
    """Each fit from the last fit's hyper-parameters and from the defaults; the
    model of the higher objective is kept (and warm-starts the next fit)."""

    def fit(self, build: Any, noise_floor: float) -> Any:
        if self.state is None:
            return super().fit(build, noise_floor)
        warm = super().fit(build, noise_floor)
        warm_state, self.state = self.state, None
        try:
            cold = super().fit(build, noise_floor)
        except Exception:  # noqa: BLE001 - keep the warm fit
            self.state = warm_state
            return warm
        if fitted_objective(cold, self.mll_class) > fitted_objective(
            warm, self.mll_class
        ):
            return cold
        self.state = warm_state
        return warm


def two_start() -> AddTreeStrategy:
    """The default loop with :class:`TwoStartFit` fits."""
    fit = AddTreeFit.from_options(AddTreeOptions(), make_fitter=TwoStartFit)
    return AddTreeStrategy(fit=fit)


def _register() -> None:
    if "treebo_steps" in PRESETS:
        return
    register_preset("treebo_steps", StepAware)
    register_preset(
        "treebo_no_alt",
        lambda: AddTreeStrategy(AddTreeOptions(alternative_kernels=())),
    )
    interactions = replace(LOOP_KERNEL_OPTIONS, ancestor_interactions=True)
    register_preset("treebo_two_start", two_start)
    register_preset(
        "treebo_alt_plain",
        lambda: AddTreeStrategy(
            AddTreeOptions(alternative_kernels=(interactions, AddTreeKernelOptions()))
        ),
    )


_register()
