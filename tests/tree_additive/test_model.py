import copy
import functools

import pytest
import torch

from treebo.gp import fit_model
from treebo.tree_additive import TreeAdditiveGP, TreeAdditiveKernel
from treebo.tree_additive.structure_learning import _ForestState, _StructureScorer


def _data(n=30, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=torch.float64)
    Y = torch.sin(5 * X[:, :1] * X[:, 1:2]) + X[:, 2:3] ** 2 - X[:, 3:4]
    return X, Y


@functools.cache
def _fitted_once(edges):
    X, Y = _data()
    model = TreeAdditiveGP(X, Y, edges=torch.tensor(edges))
    return fit_model(model), X


def _fitted(edges=((0, 1), (2, 1))):
    """A fitted model of its own (a copy of one fit shared by the tests)."""
    model, X = _fitted_once(edges)
    return copy.deepcopy(model), X


def test_component_means_sum_to_the_posterior_mean():
    model, _ = _fitted()
    Q = torch.rand(
        2, 7, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64
    ).double()
    post = model.component_posterior(Q)
    assert post.mean.shape == post.variance.shape == (2, 7, 3)
    full = model.posterior(Q).mean.squeeze(-1)
    assert torch.allclose(post.offset + post.mean.sum(-1), full, atol=1e-8)
    # Component variances: non-negative, each at most its prior (scaled) and
    # at the training inputs far below it.
    std = model.outcome_transform.stdvs.squeeze()
    prior = model.covar_module.component_scales() * std**2
    assert (post.variance >= 0).all() and (post.variance <= prior + 1e-9).all()


def test_component_variance_equals_a_direct_computation():
    model, X = _fitted()
    x = torch.rand(1, 4, dtype=torch.float64)
    kernel = model.covar_module
    K = kernel(X).to_dense() + model.likelihood.noise * torch.eye(X.shape[0])
    k_c = kernel.component_covariances(x, X)[:, 0, :]  # C x n
    prior = kernel.component_scales()
    direct = prior - (k_c @ torch.linalg.solve(K, k_c.T)).diagonal()
    std = model.outcome_transform.stdvs.squeeze()
    post = model.component_posterior(x)
    assert torch.allclose(post.variance[0], direct * std**2, atol=1e-10)


def test_grid_posterior_equals_component_posterior_at_the_grid_points():
    model, _ = _fitted()
    g = torch.Generator().manual_seed(2)
    grid = torch.rand(4, 3, generator=g, dtype=torch.float64)
    with torch.no_grad():
        post = model.grid_posterior(grid)
    # Edge 0 = (0, 1) at grid values (a, b); isolated variable 3 at c.
    a, b, c = 2, 1, 0
    x = torch.rand(1, 4, dtype=torch.float64)
    x[0, 0], x[0, 1], x[0, 3] = grid[0, a], grid[1, b], grid[3, c]
    point = model.component_posterior(x)
    assert post.edge_mean[0, a, b] == pytest.approx(float(point.mean[0, 0]))
    assert post.edge_variance[0, a, b] == pytest.approx(float(point.variance[0, 0]))
    assert post.variable_mean[3, c] == pytest.approx(float(point.mean[0, 2]))
    batched = model.grid_posterior(torch.stack([grid, grid]))
    assert torch.allclose(batched.edge_mean[1], post.edge_mean)


def test_set_edges_updates_the_posterior():
    model, X = _fitted()
    before = model.posterior(X[:3]).mean
    model.set_edges(None)
    assert model.covar_module.num_components == 4
    assert not torch.allclose(model.posterior(X[:3]).mean, before)


def test_bad_inputs_are_refused():
    X, Y = _data()
    with pytest.raises(ValueError, match="train_Y"):
        TreeAdditiveGP(X, Y.squeeze(-1))
    with pytest.raises(ValueError, match="covar_module"):
        TreeAdditiveGP(X, Y, covar_module=TreeAdditiveKernel(3))
    with pytest.raises(ValueError, match="cycle"):
        TreeAdditiveGP(X, Y, edges=torch.tensor([[0, 1], [1, 2], [0, 2]]))


def test_single_edge_changes_score_like_a_rebuilt_kernel():
    model, X = _fitted(edges=((0, 1), (3, 2)))
    scorer = _StructureScorer(model, equalize_scales=False)
    state = _ForestState(model.edges, 4)
    pairs = torch.tensor([[1, 2], [0, 1], [1, 3]])
    add = torch.tensor([True, False, True])
    grams = scorer.gram + scorer.edge_deltas(pairs, add, state.degree())
    raw = {k: v for k, v in model.covar_module.state_dict().items() if "raw" in k}
    for i in range(3):
        kernel = TreeAdditiveKernel(4, state.tensor(pairs[i], bool(add[i]))).double()
        kernel.load_state_dict(raw, strict=False)
        assert torch.allclose(kernel(X).to_dense(), grams[i], atol=1e-12)


def test_an_input_transform_is_applied_to_queries_and_grids():
    from botorch.models.transforms.input import Normalize

    X, Y = _data()
    X = 10 * X - 5
    bounds = torch.tensor([[-5.0] * 4, [5.0] * 4], dtype=torch.float64)
    model = TreeAdditiveGP(
        X, Y, edges=torch.tensor([[0, 1]]), input_transform=Normalize(4, bounds=bounds)
    )
    fit_model(model)
    Q = 10 * torch.rand(6, 4, dtype=torch.float64) - 5
    post = model.component_posterior(Q)
    full = model.posterior(Q).mean.squeeze(-1)
    assert torch.allclose(post.offset + post.mean.sum(-1), full, atol=1e-8)
    grid = 10 * torch.rand(4, 3, dtype=torch.float64) - 5
    with torch.no_grad():
        tables = model.grid_posterior(grid)
    x = grid[:, 0].reshape(1, 4)  # every variable at its first grid value
    point = model.component_posterior(x)
    assert float(tables.edge_mean[0, 0, 0]) == pytest.approx(float(point.mean[0, 0]))
