"""The default loop taken apart: the variants of the loop's ablation.

``plain`` is the plainest BoTorch loop around the Add-Tree GP: Definition 4's kernel
(nothing shared, no offsets), the noise inferred under BoTorch's default prior
(log-normal, median ``e^-4``, floor ``1e-4``: the run's ``noise="infer"``), a fresh fit
at every proposal, LogEI, no local steps and no alternative kernels. Each other variant
adds one part of the pre-noise default loop back (``plain+PART``) or removes one from it
(``treebo-PART``):

==============  ===============================================================
``kernel``      the loop's kernel (shared by depth, vertex offsets, shared
                components)
``floor``       the objective taken as deterministic: noise floor 1e-6, its
                prior's median at ``e^2 * 1e-6``, local steps wherever due
``warm``        each fit warm-started from the last one
``alt``         the interaction-term kernel as a leave-one-out alternative
``local``       local steps around the incumbent
==============  ===============================================================

``treebo_no_ties`` is the default loop without the exploring step after a tie
(:mod:`treebo.strategies.ties`); no other variant has it. ``treebo_plugin_ei`` is the
default loop whose LogEI improves on the best posterior mean at the evaluated
configurations (plug-in EI) where the noise is not negligible, instead of on the best
noisy score. ``treebo_all_parts`` and
``treebo_deterministic`` are the default loop as it was before noise was inferred (the
run's ``noise`` taken as ``"deterministic"``).

Registered as presets of :mod:`benchmarks.methods.treebo` on import.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction, LogExpectedImprovement
from torch import Tensor

from treebo.add_tree import AddTreeOptions, AddTreeStrategy
from treebo.add_tree.fitting import AddTreeFit
from treebo.add_tree.global_search import LogEISearch
from treebo.add_tree.model import AddTreeGP
from treebo.add_tree.options import (
    LOOP_KERNEL_OPTIONS,
    AddTreeKernelOptions,
    LocalStepOptions,
)
from treebo.add_tree.strategy import LOCAL_NOISE_FACTOR
from treebo.gp.noise import INFERRED_NOISE_FLOOR
from treebo.strategies.base import Observations, Prediction, Proposal
from treebo.strategies.fitting import WarmStartFit

from .treebo import PRESETS, register_preset

PARTS = ("kernel", "floor", "warm", "alt", "local")


def never(observations: Observations) -> bool:
    """No exploring step after a tie (the loop before the tie rule)."""
    del observations
    return False


class DeclaredNoise(AddTreeStrategy):
    """An Add-Tree strategy that models every run as declared ``noise``, without the
    exploring step after a tie (the loop before both).

    Args:
        options: As for :class:`~treebo.add_tree.AddTreeStrategy`.
        noise: ``"infer"`` or ``"deterministic"``.
        **parts: The strategy's parts (``fit=`` ...).
    """

    name = "add_tree_declared_noise"

    def __init__(
        self, options: Any = None, noise: str = "deterministic", **parts: Any
    ) -> None:
        super().__init__(options, explore=never, **parts)
        self.declared = noise

    def propose(self, observations: Observations) -> Proposal:
        return super().propose(replace(observations, noise=self.declared))

    def predict(self, observations: Observations) -> Prediction | None:
        return super().predict(replace(observations, noise=self.declared))


def ablated(parts: frozenset[str]) -> DeclaredNoise:
    """The Add-Tree strategy with the parts in ``parts`` (the rest as ``plain``).

    Args:
        parts: A subset of :data:`PARTS`.
    """
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"unknown parts {sorted(unknown)}; known: {PARTS}.")
    kernel = LOOP_KERNEL_OPTIONS if "kernel" in parts else AddTreeKernelOptions()
    options = AddTreeOptions(
        kernel=kernel,
        alternative_kernels=None if "alt" in parts else (),
        local=LocalStepOptions() if "local" in parts else None,
    )
    fit = AddTreeFit.from_options(
        options, make_fitter=partial(WarmStartFit, warm_start="warm" in parts)
    )
    noise = "deterministic" if "floor" in parts else "infer"
    return DeclaredNoise(options, noise, fit=fit)


class PlugInLogEISearch(LogEISearch):
    """LogEI over the best posterior mean at the evaluated configurations (plug-in
    EI) where the noise is not negligible, instead of over the best noisy score."""

    def acquisition(self, model: AddTreeGP, y: Tensor) -> AcquisitionFunction:
        noise = float(model.likelihood.noise.detach().max())
        if noise <= LOCAL_NOISE_FACTOR * INFERRED_NOISE_FLOOR:
            return super().acquisition(model, y)
        with torch.no_grad():
            best = model.posterior(model.train_inputs[0][: y.shape[0]]).mean.max()
        return LogExpectedImprovement(model, best_f=best)


def plug_in_ei() -> AddTreeStrategy:
    """The default Add-Tree strategy with :class:`PlugInLogEISearch`."""
    return AddTreeStrategy(search=PlugInLogEISearch())


def _register() -> None:
    variants = {"plain": frozenset()}
    for part in PARTS:
        variants[f"plain+{part}"] = frozenset({part})
        variants[f"treebo-{part}"] = frozenset(PARTS) - {part}
    variants["treebo_all_parts"] = frozenset(PARTS)
    for name, parts in variants.items():
        if name not in PRESETS:
            register_preset(name, lambda parts=parts: ablated(parts))
    if "treebo_deterministic" not in PRESETS:
        register_preset("treebo_deterministic", DeclaredNoise)
        register_preset("treebo_no_ties", lambda: AddTreeStrategy(explore=never))
        register_preset("treebo_plugin_ei", plug_in_ei)


_register()
