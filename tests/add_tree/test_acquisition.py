"""Add-Tree-GP-UCB acquisition and its tree-aware optimizers."""

from __future__ import annotations

import math

import pytest
import torch

from tests.add_tree.test_model import fitted_jenatton_model
from treebo.add_tree import AddTreeUCB, add_tree_beta, optimize_add_tree_ucb


def test_per_vertex_optimization_matches_a_grid_search():
    problem, model = fitted_jenatton_model(n=15, seed=5)
    space = problem.space
    acqf = AddTreeUCB(model, beta=1.0)
    result = optimize_add_tree_ucb(acqf, space, num_restarts=4, raw_samples=64, seed=0)
    # Brute force: every vertex here owns one column, so a fine grid of rows
    # scores all vertices at once.
    grid = torch.linspace(0, 1, 2001, dtype=torch.float64)
    G = space.bounds[0] + grid.unsqueeze(-1) * (space.bounds[1] - space.bounds[0])
    with torch.no_grad():
        best = acqf.vertex_values(G).max(0).values
    path_scores = space.tree.path_vertex_mask.double() @ best
    assert result.path == int(path_scores.argmax())
    offset = acqf.offset()
    assert float(result.value) >= float(path_scores.max() + offset) - 1e-6
    # Each path's point holds the per-vertex optima with that path's choices.
    rows = result.path_candidates
    torch.testing.assert_close(rows[result.path], result.candidate[0])
    torch.testing.assert_close(
        rows,
        space.canonicalize(
            space.set_paths(
                result.vertex_point.expand(space.num_paths, -1),
                torch.arange(space.num_paths),
            )
        ),
    )
    # The returned point is a valid configuration on the chosen path.
    config = space.to_dict(result.candidate[0])
    space.validate(config)
    assert {k: config[k] for k in space.paths()[result.path]} == space.paths()[
        result.path
    ]


def test_joint_path_selection_picks_the_best_joint_ucb():
    problem, model = fitted_jenatton_model(n=15, seed=5)
    space = problem.space
    acqf = AddTreeUCB(model, beta=1.0)
    result = optimize_add_tree_ucb(
        acqf, space, num_restarts=4, raw_samples=64, seed=0, path_selection="joint"
    )
    space.validate(space.to_dict(result.candidate[0]))
    # The chosen path's point has the largest whole-function UCB among the
    # points assembled for every path from the same per-vertex optima.
    points = torch.cat(
        [
            space.set_paths(result.vertex_point, torch.tensor([p]))
            for p in range(space.num_paths)
        ]
    )
    with torch.no_grad():
        mean, var = model.posterior_mean_variance(points.unsqueeze(-2))
    joint = (mean + var.sqrt()).squeeze(-1)
    assert result.path == int(joint.argmax())
    with pytest.raises(ValueError, match="path_selection"):
        optimize_add_tree_ucb(acqf, space, path_selection="best")


def test_many_paths_are_searched_by_dynamic_programming():
    # Six flags that each activate a parameter: 64 paths, more than are listed.
    from treebo import Choice, Real, TreeSpace, Vertex
    from treebo.add_tree import AddTreeGP
    from treebo.gp import fit_model
    from treebo.space.configurations import MAX_LISTED_PATHS

    space = TreeSpace(
        Vertex(
            [Real("x", 0, 1)],
            [
                Choice(f"f{i}", {0: Vertex(), 1: Vertex([Real(f"w{i}", 0, 1)])})
                for i in range(6)
            ],
        )
    )
    assert space.num_paths == 64 > MAX_LISTED_PATHS
    X = space.sample(30, seed=0)
    y = (X[:, 1:7] * torch.arange(1, 7) - 3).sum(-1, keepdim=True) + X[:, :1]
    model = AddTreeGP(X, y, space.to_hierarchical_dependencies(), bounds=space.bounds)
    fit_model(model)
    acqf = AddTreeUCB(model, beta=1.0)
    result = optimize_add_tree_ucb(acqf, space, seed=0, path_selection="sum")
    assert result.path is None
    # The chosen point's value is the best path sum of the per-vertex optima.
    with torch.no_grad():
        best = acqf.vertex_values(result.vertex_point)[0]
    contributes = model.covar_module.vertex_contributes.double()
    totals = space.tree.path_vertex_mask.double() @ (best * contributes)
    torch.testing.assert_close(result.value, totals.max() + acqf.offset())
    with torch.no_grad():
        torch.testing.assert_close(acqf(result.candidate.unsqueeze(0))[0], result.value)
    # Every runner-up is a valid point scored by its own path sum.
    with torch.no_grad():
        values = acqf(result.path_candidates.unsqueeze(-2))
    torch.testing.assert_close(values, result.path_values)


def test_beta_schedule_of_the_paper():
    beta = add_tree_beta(10, torch.tensor([0, 1, 3]))
    torch.testing.assert_close(
        beta, torch.tensor([0.2, 0.2, 0.6], dtype=torch.float64) * math.log(20)
    )
    with pytest.raises(ValueError, match="t must be"):
        add_tree_beta(0, torch.tensor([1]))


def test_forward_is_the_sum_of_vertex_ucbs_on_the_path():
    problem, model = fitted_jenatton_model()
    acqf = AddTreeUCB(model, beta=2.0)
    Z = problem.space.sample(7, seed=4)
    with torch.no_grad():
        vp = model.vertex_posterior(Z)
        expected = vp.offset + (
            (vp.mean + math.sqrt(2.0) * vp.variance.sqrt())
            * problem.space.tree.vertex_activity(Z)
        ).sum(-1)
        torch.testing.assert_close(acqf(Z.unsqueeze(-2)), expected)
    low = AddTreeUCB(model, beta=2.0, maximize=False)
    with torch.no_grad():
        vals = low.vertex_values(Z)
    torch.testing.assert_close(vals, -vp.mean + math.sqrt(2.0) * vp.variance.sqrt())


def test_log_ei_on_the_fast_posterior_equals_the_full_posterior():
    from botorch.acquisition import LogExpectedImprovement
    from botorch.models import SingleTaskGP

    problem, model = fitted_jenatton_model(n=16, seed=9)
    Z = problem.space.sample(9, seed=10).unsqueeze(-2).requires_grad_(True)
    fast = LogExpectedImprovement(model, best_f=0.3)

    def full(X):  # SingleTaskGP's own posterior on the same model
        return SingleTaskGP.posterior(model, X)

    a = fast(Z)
    with torch.no_grad():
        post = full(Z)
    fast_post = model.posterior(Z)
    torch.testing.assert_close(fast_post.mean, post.mean, atol=1e-9, rtol=1e-7)
    torch.testing.assert_close(fast_post.variance, post.variance, atol=1e-9, rtol=1e-6)
    (ga,) = torch.autograd.grad(a.sum(), Z)
    assert torch.isfinite(ga).all() and ga.abs().sum() > 0
