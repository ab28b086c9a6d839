import pytest
import torch

from treebo.gp import fit_model
from treebo.test_functions import AdditiveGPFunction, additive_graph
from treebo.tree_additive import TreeAdditiveGP, learn_tree_structure


def _edge_set(edges):
    return {tuple(sorted(e)) for e in edges.tolist()}


@pytest.mark.parametrize("seed", [0, 1])
def test_a_planted_star_is_recovered_from_additive_gp_samples(seed):
    d, truth = additive_graph("star", 6)
    f = AdditiveGPFunction(d, truth, grid_points=50, seed=seed)
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(100, d, generator=g, dtype=torch.float64)
    model = fit_model(TreeAdditiveGP(X, f(X).unsqueeze(-1)))  # fully additive
    model.set_edges(learn_tree_structure(model, num_samples=300, seed=0))
    fit_model(model)  # refit with the first structure, then learn again
    edges = learn_tree_structure(model, num_samples=300, seed=1)
    assert _edge_set(edges) == _edge_set(truth)


def test_the_result_is_a_forest_that_scores_at_least_the_start():
    g = torch.Generator().manual_seed(3)
    X = torch.rand(40, 5, generator=g, dtype=torch.float64)
    Y = torch.sin(4 * X[:, :1] + 3 * X[:, 1:2] * X[:, 2:3]) + X[:, 3:4]
    model = fit_model(TreeAdditiveGP(X, Y, edges=torch.tensor([[0, 4]])))

    def score(edges):
        model.set_edges(edges)
        model.train()
        mll = model.likelihood(model(*model.train_inputs)).log_prob(model.train_targets)
        model.eval()
        return float(mll)

    start = score(torch.tensor([[0, 4]]))
    edges = learn_tree_structure(model, num_samples=200, seed=0)
    assert score(edges) >= start - 1e-9
    # Deterministic given the seed; the model's own structure is unchanged.
    model.set_edges(torch.tensor([[0, 4]]))
    assert torch.equal(learn_tree_structure(model, num_samples=200, seed=0), edges)
    assert model.edges.tolist() == [[0, 4]]


def test_spanning_trees_are_mutated_and_stay_trees():
    g = torch.Generator().manual_seed(4)
    X = torch.rand(30, 4, generator=g, dtype=torch.float64)
    Y = X.prod(-1, keepdim=True)
    chain = torch.tensor([[0, 1], [1, 2], [2, 3]])
    model = fit_model(TreeAdditiveGP(X, Y, edges=chain))
    edges = learn_tree_structure(model, num_samples=64, batch_size=8, seed=0)
    assert edges.shape[0] <= 3
    model.set_edges(edges)  # raises if not a forest


@pytest.mark.full_optimizers  # checks what the optimizer finds
def test_structures_are_scored_with_equalized_scales():
    # Scales fitted under a partial star give the hub a large scale, which
    # inflates every edge it could join; scoring with equal scales (their
    # root mean square) recovers the star where the fitted scales do not.
    d, truth = additive_graph("star", 6)
    f = AdditiveGPFunction(d, truth, grid_points=50, seed=0)
    X = torch.rand(
        60, d, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    ).double()
    model = fit_model(TreeAdditiveGP(X, f(X).unsqueeze(-1), edges=truth[:2]))
    fitted = model.covar_module.scale.detach().clone()
    assert fitted[0] > 4 * fitted[1:].max()  # the trap
    edges = learn_tree_structure(model, num_samples=200, seed=0)
    assert _edge_set(edges) == _edge_set(truth)
    trapped = learn_tree_structure(
        model, num_samples=200, seed=0, equalize_scales=False
    )
    assert _edge_set(trapped) != _edge_set(truth)
    assert torch.equal(model.covar_module.scale, fitted)  # the model is unchanged
    # The same chain as a model whose scales are all the root mean square.
    model.covar_module.scale = fitted.square().mean().sqrt().expand_as(fitted)
    same = learn_tree_structure(model, num_samples=200, seed=0, equalize_scales=False)
    assert torch.equal(same, edges)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"gamma": 1.0}, "gamma"),
        ({"num_samples": 0}, "num_samples"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_settings_are_checked_by_name(kwargs, name):
    X = torch.rand(10, 3, dtype=torch.float64)
    model = TreeAdditiveGP(X, X.sum(-1, keepdim=True))
    with pytest.raises(ValueError, match=name):
        learn_tree_structure(model, **kwargs)
