"""The problem registry: ``PROBLEMS[name]()`` builds a fresh problem.

A problem has a ``space`` (:class:`~treebo.TreeSpace`), an ``objective(params)``
to minimize and an ``optimal_value`` (``None`` where unknown, e.g. a
cross-validated error). Validation problems also have ``true_value``,
``root_choice`` and ``best_branch`` (for the wrong-branch counts) and
``reseed(seed)`` (their noise). Definitions and published numbers:
``../shared/REFERENCE.md``.

=================  ==========================================================
``p1a``, ``p1b``   Jenatton et al. as in the Add-Tree paper and as in Ax
``p2``             balanced depth-4 tree (15 vertices, 8 leaves)
``t_*``            the test trees of paper 001: small/large, balanced/
                   unbalanced, shared variables none/linear/quadratic
``v_*``            validation suite: other tree shapes (:mod:`.validation`)
``flags12``,       tuning-shaped spaces: flags, integers, categoricals
``recipe_*``       (:mod:`.tuning`)
``p9_*``           model selection by 3-fold CV error (scikit-learn, real data)
``rt_*``           real tuning tasks: six learners on bundled data
                   (:mod:`.real_tasks`)
``*_noisy``        Gaussian noise of 10 % of the range added (:mod:`.noisy`)
``rkhs``, ``exp2d`` non-stationary functions (P6, P7; :mod:`.nonstationary`)
``hpobc_*``        HPO-B's conditional test tasks in continuous mode: XGBoost
                   surrogates, step-shaped (:mod:`.hpob_surrogate`)
=================  ==========================================================

The high-dimensional problems (P4, P5) are tensor objectives with their own
runner: :mod:`benchmarks.high_dim`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from treebo.test_functions import (
    PAPER_001_TREES,
    GeneralizedJenatton,
    Jenatton,
    ModelSelection,
)

from .hpob_surrogate import SURROGATE_PROBLEMS
from .noisy import NOISY_PROBLEMS
from .nonstationary import NONSTATIONARY_PROBLEMS
from .real_tasks import ACCURACY_TASKS, REAL_TASKS
from .tuning import TUNING_PROBLEMS
from .validation import VALIDATION_PROBLEMS

PROBLEMS: dict[str, Callable[[], Any]] = {
    "p1a": lambda: Jenatton("paper"),
    "p1b": lambda: Jenatton("ax"),
    "p2": lambda: GeneralizedJenatton(depth=4, balanced=True),
    **{
        f"t_{name}": (
            lambda depth=depth, balanced=balanced, shared=shared: GeneralizedJenatton(
                depth, balanced, shared=shared
            )
        )
        for name, (depth, balanced, shared) in PAPER_001_TREES.items()
    },
    **VALIDATION_PROBLEMS,
    **TUNING_PROBLEMS,
    **NONSTATIONARY_PROBLEMS,
    **REAL_TASKS,
    **ACCURACY_TASKS,
    **NOISY_PROBLEMS,
    **SURROGATE_PROBLEMS,
    # The folds are fixed (seed 0) so that every run optimizes one function.
    "p9_digits": lambda: ModelSelection("digits", seed=0),
    "p9_cancer": lambda: ModelSelection("breast_cancer", seed=0),
}


def make_problem(name: str) -> Any:
    """A fresh instance of the registered problem ``name``."""
    if name not in PROBLEMS:
        raise ValueError(f"problem must be one of {sorted(PROBLEMS)}, got {name!r}.")
    return PROBLEMS[name]()
