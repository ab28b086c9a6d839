"""Any acquisition over every path of a space, against a grid search."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition import PosteriorMean

from tests.add_tree.test_model import fitted_jenatton_model
from treebo.add_tree import AddTreeUCB, optimize_add_tree_ucb
from treebo.optim import optimize_acqf_tree


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


def test_bad_acquisition_inputs():
    problem, model = fitted_jenatton_model(n=8)
    with pytest.raises(ValueError, match="beta must be"):
        AddTreeUCB(model, beta=torch.ones(3))
    with pytest.raises(TypeError, match="needs an AddTreeGP"):
        AddTreeUCB(torch.nn.Linear(2, 2))
    _, interacting = fitted_jenatton_model(n=8, ancestor_interactions=True)
    with pytest.raises(ValueError, match="ancestor_interactions"):
        AddTreeUCB(interacting)
    with pytest.raises(TypeError, match="AddTreeUCB"):
        optimize_add_tree_ucb(PosteriorMean(model), problem.space)
    with pytest.raises(ValueError, match="num_restarts"):
        optimize_acqf_tree(
            PosteriorMean(model), problem.space, num_restarts=5, raw_samples=2
        )
