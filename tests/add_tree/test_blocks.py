"""Block-diagonal training covariances: groups, and the block-by-block likelihood."""

from __future__ import annotations

import pytest
import torch
from gpytorch.mlls import ExactMarginalLogLikelihood

from tests.conftest import random_points
from treebo.add_tree import AddTreeGP
from treebo.add_tree.blocks import covarying_groups
from treebo.gp import noise_floor_likelihood
from treebo.gp.exact_mll import CholeskyMarginalLogLikelihood


def brute_force_groups(active: torch.Tensor) -> list[int]:
    """Labels by repeated merging of points that share a vertex."""
    n = active.shape[0]
    group = list(range(n))
    changed = True
    while changed:
        changed = False
        for i in range(n):
            for j in range(n):
                if bool((active[i] & active[j]).any()) and group[i] != group[j]:
                    group[i] = group[j] = min(group[i], group[j])
                    changed = True
    loners = [i for i in range(n) if not bool(active[i].any())]
    for i in loners:
        group[i] = -1
    order = {g: k for k, g in enumerate(sorted(set(group)))}
    return [order[g] for g in group]


@pytest.mark.parametrize("seed", range(5))
def test_groups_match_brute_force(seed):
    g = torch.Generator().manual_seed(seed)
    active = torch.rand(12, 7, generator=g) < 0.15
    labels = covarying_groups(active)
    expected = brute_force_groups(active)
    # Same partition (labels may be numbered differently).
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    same_expected = torch.tensor(expected).unsqueeze(0) == torch.tensor(
        expected
    ).unsqueeze(1)
    assert torch.equal(same, same_expected)


def branchy_tree() -> tuple[int, dict]:
    """A root choice with three branches and no root parameter; the second branch
    holds a choice of its own."""
    deps = {0: {0: [1, 2], 1: [3, 4], 2: [5]}, 4: {0: [6], 1: [7, 8]}}
    return 9, deps


def noise_arguments(Y: torch.Tensor, known_noise: bool) -> dict:
    """Known noise (``train_Yvar``) or an inferred one above a floor of 1e-4."""
    if known_noise:
        return {"train_Yvar": torch.full_like(Y, 1e-3)}
    return {"likelihood": noise_floor_likelihood(1e-4)}


def value_and_gradients(mll_class, model):
    model.train()
    model.zero_grad()
    mll = mll_class(model.likelihood, model)
    inputs = [model.transform_inputs(x) for x in model.train_inputs]
    value = mll(model(*model.train_inputs), model.train_targets, *inputs)
    value.backward()
    grads = {
        n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None
    }
    return value.detach(), grads


def differences_from_dense(model) -> tuple[float, float]:
    """The marginal likelihood's absolute difference from GPyTorch's dense
    computation, and its gradients' largest excess over a relative tolerance of
    1e-8, away from the initial hyper-parameters."""
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "noise" not in name:
                p.add_(0.3 * torch.randn_like(p))
    model.train()
    reference, ref_grads = value_and_gradients(ExactMarginalLogLikelihood, model)
    value, grads = value_and_gradients(CholeskyMarginalLogLikelihood, model)
    assert grads.keys() == ref_grads.keys() and grads
    gradient = max(
        float(((grads[k] - ref_grads[k]).abs() - 1e-8 * ref_grads[k].abs()).max())
        for k in grads
    )
    return float((value - reference).abs()), gradient


@pytest.mark.parametrize(
    "options, expect_blocks",
    [
        ({}, True),
        ({"share_lengthscales": "depth", "share_outputscales": "depth"}, True),
        ({"ancestor_interactions": True}, True),
        ({"vertex_bias": "all"}, False),  # the root's constant joins every point
        ({"shared_component": True}, False),
    ],
)
@pytest.mark.parametrize("known_noise", [False, True])
def test_block_likelihood_equals_the_dense_one(options, expect_blocks, known_noise):
    d, deps = branchy_tree()
    X = random_points(d, deps, 60, seed=1)
    Y = torch.sin(5 * X).sum(-1, keepdim=True)
    noise = noise_arguments(Y, known_noise)
    model = AddTreeGP(X, Y, deps, **noise, **options)
    model.train()
    assert (model.covariance_blocks() is not None) == expect_blocks
    value, gradient = differences_from_dense(model)
    assert value < 1e-10 and gradient < 1e-10


def test_random_trees_agree_whether_or_not_they_have_blocks(tree_case):
    d, deps = tree_case
    X = random_points(d, deps, 40, seed=2)
    Y = torch.cos(3 * X).sum(-1, keepdim=True)
    model = AddTreeGP(X, Y, deps, likelihood=noise_floor_likelihood(1e-4))
    value, gradient = differences_from_dense(model)
    assert value < 1e-10 and gradient < 1e-10


def test_batched_data_and_lopsided_blocks_use_the_dense_path():
    d, deps = branchy_tree()
    X = random_points(d, deps, 30, seed=3)
    Y = X.sum(-1, keepdim=True)
    batched = AddTreeGP(X.expand(2, 30, d), Y.expand(2, 30, 1), deps)
    assert batched.covariance_blocks() is None
    X[:, 0] = 0.0  # one branch only
    X[0, 0] = 1.0
    lopsided = AddTreeGP(X, Y, deps)
    assert lopsided.covariance_blocks() is None


def posterior_differences(model: AddTreeGP, seed: int) -> dict[str, float]:
    """Largest differences of the posterior (mean and variance at single points,
    every vertex's moments) between the block and the dense solve."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "noise" not in name:
                p.add_(0.3 * torch.randn_like(p))
    d = model.train_inputs[0].shape[-1]
    deps = model.hierarchical_dependencies
    Xq = random_points(d, deps, 25, seed=seed + 100).unsqueeze(-2)
    model.eval()
    with torch.no_grad():
        block = model.posterior(Xq), model.vertex_posterior(Xq.squeeze(-2))
        model.covariance_blocks = lambda: None  # the dense path, same model
        model.train().eval()
        dense = model.posterior(Xq), model.vertex_posterior(Xq.squeeze(-2))
    return {
        "mean": float((block[0].mean - dense[0].mean).abs().max()),
        "variance": float((block[0].variance - dense[0].variance).abs().max()),
        "vertex mean": float((block[1].mean - dense[1].mean).abs().max()),
        "vertex variance": float((block[1].variance - dense[1].variance).abs().max()),
    }


@pytest.mark.parametrize("known_noise", [False, True])
def test_block_posterior_equals_the_dense_one(known_noise):
    d, deps = branchy_tree()
    X = random_points(d, deps, 60, seed=4)
    Y = torch.sin(5 * X).sum(-1, keepdim=True)
    noise = noise_arguments(Y, known_noise)
    model = AddTreeGP(X, Y, deps, **noise).eval()
    labels = model.covariance_blocks()
    assert labels is not None and int(labels.max()) >= 2  # three branches
    # The block cache holds the points block after block, in a block-diagonal L.
    cache = model.solve_cache()
    assert not torch.equal(cache["X"], model.train_inputs[0])
    sorted_labels = torch.sort(labels, stable=True).values
    across = sorted_labels.unsqueeze(0) != sorted_labels.unsqueeze(1)
    assert bool((cache["L"][across] == 0).all())
    assert torch.equal(cache["L"], cache["L"].tril())
    differences = posterior_differences(model, seed=5)
    assert max(differences.values()) < 1e-8, differences


def test_random_trees_posteriors_agree_whether_or_not_they_have_blocks(tree_case):
    d, deps = tree_case
    X = random_points(d, deps, 40, seed=6)
    Y = torch.cos(3 * X).sum(-1, keepdim=True)
    model = AddTreeGP(X, Y, deps, likelihood=noise_floor_likelihood(1e-4))
    differences = posterior_differences(model, seed=7)
    assert max(differences.values()) < 1e-8, differences
