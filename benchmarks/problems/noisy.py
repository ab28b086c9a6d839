"""Noisy versions of registered problems: Gaussian noise on every evaluation.

``PROBLEM_noisy`` adds noise of standard deviation 10 % of the problem's range over
random configurations (the range of 64 random points' true values, seed 0) to
``PROBLEM``'s objective. ``true_value`` is the noise-free objective, so a run is scored
by the true value of the configuration it recommends; ``noise_variance`` is what a
run that declares its noise would pass as ``noise=``.

==================  ===========================================================
``p1a_noisy``       P1(a), Jenatton et al. as in the Add-Tree paper
``rt_ridge_noisy``  ``rt_ridge_diab``: ridge regression on feature maps, CV MSE
==================  ===========================================================
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from treebo.test_functions import Jenatton

from .real_tasks import REAL_TASKS

#: The noise's standard deviation as a share of the range over random points.
NOISE_SHARE = 0.1
RANGE_POINTS = 64


class Noisy:
    """``problem`` with Gaussian noise (see the module docstring).

    Args:
        problem: A problem with ``space``, ``objective`` and ``optimal_value``.
        root_choice: The root's choice (for the wrong-branch counts).
    """

    def __init__(self, problem: Any, root_choice: str) -> None:
        self.problem, self.space = problem, problem.space
        self.optimal_value = problem.optimal_value
        self.root_choice = root_choice
        X = self.space.sample(RANGE_POINTS, seed=0)
        values = [self.true_value(c) for c in self.space.to_dicts(X)]
        self.noise_sd = NOISE_SHARE * (max(values) - min(values))
        self.noise_variance = self.noise_sd**2
        self.rng = np.random.default_rng(0)
        # The root choice's label at the best of the random points (a wrong-branch
        # count needs one; 64 points place it roughly).
        configs = self.space.to_dicts(X)
        self.best_branch = configs[int(np.argmin(values))][root_choice]

    def reseed(self, seed: int) -> None:
        """Seed the noise of one run."""
        self.rng = np.random.default_rng(20_011 + seed)

    def true_value(self, params: dict[str, Any]) -> float:
        return _cached_true_value(self.problem, tuple(sorted(params.items())))

    def objective(self, params: dict[str, Any]) -> float:
        return self.true_value(params) + self.noise_sd * float(
            self.rng.standard_normal()
        )


@lru_cache(maxsize=100_000)
def _cached_true_value(problem: Any, items: tuple) -> float:
    return float(problem.objective(dict(items)))


NOISY_PROBLEMS: dict[str, Callable[[], Noisy]] = {
    "p1a_noisy": lambda: Noisy(Jenatton("paper"), "x1"),
    "rt_ridge_noisy": lambda: Noisy(REAL_TASKS["rt_ridge_diab"](), "features"),
}
