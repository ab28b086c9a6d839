"""treebo's presets: named settings of the loop, run by ask and tell.

=======================  =======================================================
``treebo``               the default loop, ``minimize(...)``: LogEI on the Add-Tree
                         GP with local refinement
``treebo_global``        the same without local refinement
                         (``AddTreeOptions(local=None)``)
``treebo_ucb``           ``strategy="add_tree_ucb"``: Add-Tree-GP-UCB with the
                         loop's local steps and redirects
``treebo_ucb_paper``     Algorithm 2 of the Add-Tree paper
                         (``AddTreeUCBOptions.paper()``)
``tree_additive``        ``strategy="tree_additive"`` (real parameters only)
``treed``                ``strategy="treed"``: HTBO (real parameters only)
``treed_warp``           HTBO-WARP (``TreedOptions(warp=True)``)
``treebo_inherit``       the default loop whose kernel folds each vertex's
                         ancestors' parameters into its term
                         (:mod:`benchmarks.methods.ancestors`), with the additive
                         kernel as the leave-one-out alternative
``treebo_inherit_only``  the same kernel with no alternative
``treebo_eps``           the default loop, a random proposal with probability
                         0.1 (:mod:`benchmarks.methods.exploration`)
``treebo_inherit_eps``   ``treebo_inherit_only``, likewise
``treebo_plain``         the default loop on Definition 4's kernel (nothing shared
                         by depth, no offsets, no shared components)
``treebo_cold_alt``      the default loop, each alternative kernel's first fit
                         from its defaults (not from the main fit)
=======================  =======================================================

A benchmark of a variant that is not a preset builds its own
:class:`~treebo.strategies.Strategy` subclass and registers it here with
:func:`register_preset`; the package has no switches for experiments.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

from treebo import TreeOptimizer
from treebo.add_tree import (
    AddTreeOptions,
    AddTreeStrategy,
    AddTreeUCBOptions,
    AddTreeUCBStrategy,
    LogEISearch,
)
from treebo.add_tree.options import LOOP_KERNEL_OPTIONS, AddTreeKernelOptions
from treebo.jenatton import JenattonTreeStrategy
from treebo.loop.outcomes import score_scale
from treebo.treed import TreedOptions, TreedStrategy

from .ancestors import (
    FoldedAncestors,
    folded_ancestors,
    folded_ancestors_epsilon_greedy,
)
from .exploration import EpsilonGreedy

#: The loop's kernel settings with each vertex term folding its ancestors' in.
FOLDED = FoldedAncestors(**asdict(LOOP_KERNEL_OPTIONS))


def cold_alternatives() -> AddTreeStrategy:
    """The default loop whose alternative kernels start their first fit from their
    defaults instead of the main fit's hyper-parameters (as before 2026-11-27)."""
    strategy = AddTreeStrategy()
    for fitter in strategy.model_fit.alternative_fitters:
        fitter.state = {}  # not None: no nested start; empty: the defaults
    return strategy


#: ``{name: () -> strategy}``: what ``TreeOptimizer(strategy=...)`` takes (a name or
#: a fresh Strategy).
PRESETS: dict[str, Callable[[], Any]] = {
    "treebo": lambda: "add_tree",
    "treebo_global": lambda: AddTreeStrategy(AddTreeOptions(local=None)),
    "treebo_ucb": lambda: "add_tree_ucb",
    "treebo_ucb_paper": lambda: AddTreeUCBStrategy(AddTreeUCBOptions.paper()),
    "tree_additive": lambda: "tree_additive",
    "treed": lambda: "treed",
    "treed_warp": lambda: TreedStrategy(TreedOptions(warp=True)),
    "treebo_inherit": lambda: folded_ancestors(
        AddTreeOptions(kernel=FOLDED, alternative_kernels=(LOOP_KERNEL_OPTIONS,))
    ),
    "treebo_inherit_only": lambda: folded_ancestors(
        AddTreeOptions(kernel=FOLDED, alternative_kernels=())
    ),
    "treebo_plain": lambda: AddTreeStrategy(
        AddTreeOptions(kernel=AddTreeKernelOptions())
    ),
    # Issue 55's proxy: lengthscales per vertex, output scales still by depth.
    "treebo_ls_vertex": lambda: AddTreeStrategy(
        AddTreeOptions(kernel=replace(LOOP_KERNEL_OPTIONS, share_lengthscales="none"))
    ),
    # Issue 54's check: each alternative kernel's first fit from its defaults.
    "treebo_cold_alt": cold_alternatives,
    # The default before LogEI was integrated over the hyper-parameters.
    "treebo_map_ei": lambda: AddTreeStrategy(search=LogEISearch()),
    "jenatton_tree": lambda: "jenatton_tree",
    "jenatton_tree_linear": lambda: JenattonTreeLinear(),
    "jenatton_tree_nonlinear": lambda: "jenatton_tree_nonlinear",
    "independent": lambda: "independent",
    "treebo_eps": lambda: EpsilonGreedy(),
    "treebo_inherit_eps": lambda: folded_ancestors_epsilon_greedy(
        AddTreeOptions(kernel=FOLDED, alternative_kernels=())
    ),
}


class JenattonTreeLinear(JenattonTreeStrategy):
    """Jenatton et al.'s ``tree`` as published: the linear shared term only (the
    package's ``"jenatton_tree"`` lets the evidence choose it or random
    features)."""

    shared_terms = (False,)


def register_preset(name: str, model: Callable[[], Any]) -> None:
    """Add a preset: ``model()`` returns a strategy's name or a fresh Strategy."""
    if name in PRESETS:
        raise ValueError(f"preset {name!r} exists.")
    PRESETS[name] = model


def run_treebo(
    preset: str, problem, design: list[dict], seed: int, budget: int
) -> tuple[list[float], list[float]]:
    """``(values, proposal_seconds)`` of the preset; its initial design is
    ``design`` (treebo's own for the seed, shared by every method; a problem's
    own design, ``initial_configs``, is told before the first proposal).

    The run's recommendation (the index of the trial
    [`result()`][treebo.loop.optimizer.TreeOptimizer.result] recommends) and its
    last model's fitted noise variance in the objective's units are left on
    ``problem`` as ``recommended`` and ``fitted_noise_variance`` for the harness.
    """
    own_design = hasattr(problem, "initial_configs")  # told, not asked
    opt = TreeOptimizer(
        problem.space,
        seed=seed,
        strategy=PRESETS[preset](),
        n_initial=len(design) if own_design else None,
    )
    if opt.n_initial != len(design):
        raise ValueError(f"{preset}: its design has {opt.n_initial} points.")
    values: list[float] = []
    seconds: list[float] = []
    for params in design if own_design else []:
        values.append(problem.objective(params))
        opt.tell(params, values[-1])
    while len(values) < budget:
        t0 = time.perf_counter()
        params = opt.ask()
        if len(opt.history) >= opt.n_initial:
            seconds.append(time.perf_counter() - t0)
        value = problem.objective(params)
        opt.tell(params, value)
        values.append(value)
    best = opt.result().best_params
    problem.recommended = next(i for i, t in enumerate(opt.history) if t.params == best)
    model = opt.last_model
    if hasattr(getattr(model, "likelihood", None), "noise"):
        history = opt.history.values
        scale = score_scale(-history)
        # The model's outcomes are the loop's standardized scores (unit variance).
        noise = float(model.likelihood.noise.detach().mean())
        problem.fitted_noise_variance = noise * (scale.peak * scale.spread) ** 2
    return values, seconds
