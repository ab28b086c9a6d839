"""Add-Tree-GP-UCB acquisition and its tree-aware optimizers."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.acquisition import PosteriorMean

from tests.add_tree.test_model import fitted_jenatton_model
from treebo.acquisition import AddTreeUCB, add_tree_beta
from treebo.optim import maximize_batched, optimize_acqf_tree, optimize_add_tree_ucb


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


def test_tree_optimizer_for_any_acquisition_matches_a_grid_search():
    problem, model = fitted_jenatton_model(n=15, seed=6)
    space = problem.space
    acqf = PosteriorMean(model)
    result = optimize_acqf_tree(acqf, space, num_restarts=6, raw_samples=128, seed=1)
    # Brute force on each path over a grid of its two active continuous values.
    g = torch.linspace(0, 1, 101, dtype=torch.float64)
    best_per_path = []
    for p in range(space.num_paths):
        cols = [
            c for c in space.continuous_columns if space.tree.path_active_columns[p, c]
        ]
        mesh = torch.cartesian_prod(g, g)
        X = space.canonical_values.repeat(mesh.shape[0], 1)
        lo, up = space.bounds[0, cols], space.bounds[1, cols]
        X[:, cols] = lo + mesh * (up - lo)
        X = space.set_paths(X, torch.full((X.shape[0],), p))
        with torch.no_grad():
            best_per_path.append(acqf(X.unsqueeze(-2)).max())
    best_per_path = torch.stack(best_per_path)
    assert result.path == int(best_per_path.argmax())
    assert float(result.value) >= float(best_per_path.max()) - 1e-6
    torch.testing.assert_close(result.path_values, best_per_path, atol=1e-3, rtol=0)
    # Each path's best point lies on that path and scores its path value.
    rows = result.path_candidates
    assert rows.shape == (space.num_paths, space.dim)
    on_path = space.tree.vertex_activity(rows).double() @ (
        space.tree.path_vertex_mask.double().T
    )
    assert torch.equal(
        on_path.argmax(-1), torch.arange(space.num_paths)
    ) and torch.equal(
        torch.diagonal(on_path), space.tree.path_vertex_mask.sum(-1).double()
    )
    with torch.no_grad():
        torch.testing.assert_close(acqf(rows.unsqueeze(-2)), result.path_values)
    torch.testing.assert_close(rows[result.path], result.candidate[0])


def test_maximize_batched_respects_bounds_and_frozen_entries():
    target = torch.tensor([[0.3, 2.0], [-1.0, 0.5]])

    def f(x):
        return -(x - target).pow(2).sum(-1)

    x0 = torch.zeros(2, 2)
    free = torch.tensor([[True, True], [False, True]])
    x, values = maximize_batched(
        f, x0, torch.tensor([-2.0, -2.0]), torch.tensor([2.0, 1.0]), free=free
    )
    torch.testing.assert_close(
        x, torch.tensor([[0.3, 1.0], [0.0, 0.5]]), atol=1e-6, rtol=0
    )
    with pytest.raises(ValueError, match="lower bounds exceed"):
        maximize_batched(f, x0, torch.tensor(1.0), torch.tensor(0.0))


def test_bad_acquisition_inputs():
    problem, model = fitted_jenatton_model(n=8)
    with pytest.raises(ValueError, match="beta must be"):
        AddTreeUCB(model, beta=torch.ones(3))
    with pytest.raises(TypeError, match="needs an AddTreeGP"):
        AddTreeUCB(torch.nn.Linear(2, 2))
    _, inheriting = fitted_jenatton_model(n=8, inherit_ancestors=True)
    with pytest.raises(ValueError, match="inherit_ancestors"):
        AddTreeUCB(inheriting)
    with pytest.raises(TypeError, match="AddTreeUCB"):
        optimize_add_tree_ucb(PosteriorMean(model), problem.space)
    with pytest.raises(ValueError, match="num_restarts"):
        optimize_acqf_tree(
            PosteriorMean(model), problem.space, num_restarts=5, raw_samples=2
        )


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
    from treebo.models import AddTreeGP, fit_model
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
