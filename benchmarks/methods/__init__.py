"""The method registry: ``run_method(name, problem, design, seed, budget)``.

Every method starts from the same initial design for a seed (treebo's,
:func:`~treebo.loop.initial_design`; SMAC and Ax use their own) and returns
``(values, proposal_seconds)``. Names: treebo's presets
(:mod:`.treebo`), BoTorch peers (:mod:`.botorch_peers`) and established tuners
(:mod:`.tuners`).
"""

from __future__ import annotations

from pathlib import Path

from . import (
    ablation,  # noqa: F401  (registers the ablation variants)
    noise_prior,  # noqa: F401  (registers issue 69's variant)
    robust,  # noqa: F401  (registers an experiment)
    stacking,  # noqa: F401  (registers issue 68's structure averaging)
    steps,  # noqa: F401  (registers issue 68's variants)
    warp,  # noqa: F401  (registers issue 68's outcome warp)
)
from .botorch_peers import KINDS as BOTORCH_PEERS
from .botorch_peers import run_botorch_peer
from .treebo import PRESETS, run_treebo
from .tuners import run_ax, run_optuna, run_random, run_smac

TUNERS = ("random", "optuna_tpe", "smac", "ax_default")


def method_names() -> list[str]:
    """Every registered method."""
    return [*PRESETS, *BOTORCH_PEERS, *TUNERS]


def run_method(
    name: str,
    problem,
    design: list[dict],
    seed: int,
    budget: int,
    problem_name: str = "",
    checkpoint: Path | None = None,
) -> tuple[list[float], list[float]]:
    """``(values, proposal_seconds)`` of method ``name`` on ``problem``."""
    if name in PRESETS:
        return run_treebo(name, problem, design, seed, budget)
    if name in BOTORCH_PEERS:
        return run_botorch_peer(
            name, problem, problem_name, design, seed, budget, checkpoint
        )
    if name == "random":
        return run_random(problem, design, seed, budget), []
    if name == "optuna_tpe":
        return run_optuna(problem, design, seed, budget), []
    if name == "smac":
        return run_smac(problem, seed, budget), []
    if name == "ax_default":
        return run_ax(problem, seed, budget), []
    raise ValueError(f"method must be one of {method_names()}, got {name!r}.")
