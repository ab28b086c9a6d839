"""The P8 grid benchmark: its functions, measure, profiles and GP peers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from benchmarks import grid_bo, grid_peers, grid_report
from benchmarks.problems import grid as grid_problems
from benchmarks.problems.protocol import Problem


def test_functions_have_their_published_optima():
    assert float(grid_problems.damavandi(torch.tensor([[2.0, 2.0]]))[0]) == 0.0
    assert float(grid_problems.damavandi(torch.tensor([[3.0, 2.0]]))[0]) == 2 + 16 + 50
    assert float(grid_problems.schaffer(torch.tensor([[0.0, 0.0]]))[0]) == 0.0
    for name in ("damavandi", "schaffer", "griewank3"):
        problem = grid_problems.grid_problem(name)
        assert isinstance(problem, Problem)
        assert problem.optimal_value == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="problem must be one of"):
        grid_problems.grid_problem("nope")


def test_shared_design_is_on_the_grid_and_distinct():
    problem = grid_problems.grid_problem("damavandi")
    design = grid_bo.shared_design(problem, seed=3)
    grid = problem.grid
    flat = grid.flat(grid.indices(problem.space.to_tensor(design)))
    assert len(design) == problem.n_initial == len(set(flat.tolist()))


def test_evaluations_to_optimum_and_profiles():
    def record(method, seed, values):
        return {
            "problem": "p",
            "method": method,
            "seed": seed,
            "budget": 4,
            "optimal_value": 0.0,
            "values": values,
        }

    records = [
        record("a", 0, [3.0, 0.0, 1.0, 1.0]),  # reached at 2
        record("b", 0, [3.0, 2.0, 1.0, 0.0]),  # at 4
        record("a", 1, [1.0, 1.0, 1.0, 1.0]),  # never: 4 + 100
        record("b", 1, [0.0, 1.0, 1.0, 1.0]),  # at 1
    ]
    assert [grid_bo.evaluations_to_optimum(r) for r in records] == [2, 4, 104, 1]
    ratios, profiles = grid_bo.performance_profiles(records, ["a", "b"])
    assert ratios[0] == 1 and ratios[-1] == 5
    # a: ratios 1 and 104; b: ratios 2 and 1.
    np.testing.assert_allclose(profiles["a"], [0.5, 0.5, 0.5, 0.5, 0.5])
    np.testing.assert_allclose(profiles["b"], [0.5, 1.0, 1.0, 1.0, 1.0])
    assert grid_report.final_regret(records[0]) == -np.inf


def test_fast_gp_scores_equal_botorch_posterior():
    from botorch.acquisition import LogExpectedImprovement

    problem = grid_problems.grid_problem("griewank3")
    grid = problem.grid
    X = grid.points(
        torch.randint(0, 21, (12, 3), generator=torch.Generator().manual_seed(0))
    )
    y = -problem.function(X).unsqueeze(-1)
    model = grid_peers.fit_grid_gp(grid, X, y, seed=0)
    Z = grid_peers.unit_coordinates(grid, grid.unflatten(torch.arange(500)))
    with torch.no_grad():
        post = model.posterior(Z.unsqueeze(-2))
        mean, sd = grid_peers.mean_and_sd(model, {}, Z)
        torch.testing.assert_close(mean, post.mean.flatten())
        torch.testing.assert_close(sd, post.variance.flatten().sqrt())
        expected = LogExpectedImprovement(model, best_f=y.max())(Z.unsqueeze(-2))
        got = grid_peers.log_ei(mean, sd, float(y.max()))
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-6)


def test_report_keeps_runs_every_method_completed():
    records = [
        {"problem": "p", "seed": 0, "method": "a"},
        {"problem": "p", "seed": 0, "method": "b"},
        {"problem": "p", "seed": 1, "method": "a"},
    ]
    assert grid_report.complete(records, ["a", "b"]) == records[:2]
    assert grid_report.complete(records, ["a"]) == records
