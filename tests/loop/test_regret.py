"""Golden-seed regret runs of the default loops (``-m slow``; minutes each).

Each pins a seed on which a setting used to fail, so a regression that brings
the failure back shows up here before the benchmarks are re-run.
"""

from __future__ import annotations

import pytest

from treebo import TreeOptimizer, minimize
from treebo.test_functions import GeneralizedJenatton, Jenatton

# Regret studies: minutes each, beyond the default per-test time limit.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


def test_forty_evaluations_on_jenatton_reach_small_regret():
    problem = Jenatton("paper")
    result = minimize(problem.objective, problem.space, budget=40, seed=0)
    assert result.best_value - problem.optimal_value <= 1e-3
    assert result.best_value == pytest.approx(problem.objective(result.best_params))


def test_add_tree_ucb_defaults_leave_the_wrong_branch_of_seed_4():
    # Seed 4 is one where the paper's loop stays on a wrong branch for 50
    # evaluations; with redirects and local steps it reaches the optimum.
    problem = Jenatton("paper")
    opt = TreeOptimizer(problem.space, seed=4, strategy="add_tree_ucb")
    for _ in range(25):
        params = opt.ask()
        opt.tell(params, problem.objective(params))
    assert opt.best_trial.value - problem.optimal_value <= 1e-4
    assert "local" in opt.history.kinds


def test_shared_components_find_the_optimal_branch_of_a_depth_4_tree():
    # Seed 3: without shared components the model predicts about 1.9 for the
    # unexplored optimal leaf at its optimum (true value 0.1).
    problem = GeneralizedJenatton(depth=4, balanced=True)
    result = minimize(problem.objective, problem.space, budget=20, seed=3)
    assert result.best_value - problem.optimal_value <= 1e-3


def test_three_parallel_workers_reach_small_regret_on_jenatton():
    problem = Jenatton("paper")
    opt = TreeOptimizer(problem.space, seed=1)
    while len(opt.history) < 30:
        batch = [opt.ask() for _ in range(3)]
        for params in batch:
            opt.tell(params, problem.objective(params))
    configs = [tuple(sorted(t.params.items())) for t in opt.history]
    assert len(set(configs)) == len(configs)  # no point evaluated twice
    assert opt.best_trial.value - problem.optimal_value <= 1e-3
