"""AddTreeGP: drop-in behaviour, per-vertex posteriors, groups of covarying points."""

from __future__ import annotations

import warnings

import pytest
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models.transforms.input import Normalize
from botorch.models.transforms.outcome import Standardize
from botorch.utils.datasets import SupervisedDataset
from gpytorch.mlls import ExactMarginalLogLikelihood

from tests.conftest import random_points, random_tree
from treebo.add_tree import AddTreeGP
from treebo.add_tree.model import covarying_groups, transform_dependencies
from treebo.gp import noise_floor_likelihood
from treebo.gp.exact_mll import CholeskyMarginalLogLikelihood
from treebo.test_functions import GeneralizedJenatton, Jenatton


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


def fitted_jenatton_model(n: int = 20, seed: int = 0, **kwargs) -> tuple:
    problem = Jenatton()
    X = problem.space.sample(n, seed=seed)
    Y = problem(X).unsqueeze(-1)
    model = AddTreeGP(
        X,
        Y,
        problem.space.to_hierarchical_dependencies(),
        bounds=problem.space.bounds,
        **kwargs,
    )
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    model.eval()
    return problem, model


@pytest.mark.parametrize(
    "vertex_bias, shared_component", [("none", False), ("all", False), ("all", True)]
)
@pytest.mark.parametrize(
    "problem", [Jenatton(), GeneralizedJenatton(3, balanced=False)]
)
def test_vertex_means_sum_to_posterior_mean_on_every_path(
    problem, vertex_bias, shared_component
):
    space = problem.space
    X = space.sample(25, seed=1)
    model = AddTreeGP(
        X,
        problem(X).unsqueeze(-1),
        space.to_hierarchical_dependencies(),
        bounds=space.bounds,
        vertex_bias=vertex_bias,
        shared_component=shared_component,
    )
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    model.eval()
    Z = space.sample(8 * space.num_paths, seed=2)
    Z = space.set_paths(Z, torch.arange(space.num_paths).repeat(8))
    with torch.no_grad():
        full = model.posterior(Z).mean.squeeze(-1)
        vp = model.vertex_posterior(Z)
    active = space.tree.vertex_activity(Z).to(vp.mean)
    torch.testing.assert_close(
        (vp.mean * active).sum(-1) + vp.offset, full, atol=1e-8, rtol=0
    )


def test_vertex_variance_of_a_single_vertex_tree_is_the_posterior_variance():
    # One root vertex, no choices: the only component is the whole function.
    X = torch.rand(15, 2, dtype=torch.float64)
    Y = torch.sin(6 * X).sum(-1, keepdim=True)
    model = AddTreeGP(X, Y, {})
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    model.eval()
    Z = torch.rand(6, 2, dtype=torch.float64)
    with torch.no_grad():
        post = model.posterior(Z)
        vp = model.vertex_posterior(Z)
    torch.testing.assert_close(
        vp.variance[:, 0], post.variance.squeeze(-1), atol=1e-9, rtol=1e-6
    )


def test_drop_in_arguments_of_hierarchical_conditional_kernel_gp():
    problem = Jenatton()
    space = problem.space
    X = space.sample(12, seed=3)
    Y = problem(X).unsqueeze(-1)
    deps = space.to_hierarchical_dependencies()
    model = AddTreeGP(
        X,
        Y,
        deps,
        train_Yvar=torch.full_like(Y, 1e-4),
        input_transform=Normalize(9, bounds=space.bounds),
        outcome_transform=Standardize(1),
    )
    # Normalize touches the choice columns: their branch values move with it.
    assert model.tree.hierarchical_dependencies[0] == {0.0: [1, 2], 1.0: [3, 4]}
    assert model.hierarchical_dependencies == deps
    model.eval()
    post = model.posterior(X)
    # Near-noiseless fixed noise: the posterior interpolates the data.
    torch.testing.assert_close(post.mean, Y, atol=0.05, rtol=0)


def test_transform_dependencies_moves_branch_values():
    deps = {0: {2: [1], 4: [2]}}
    X = torch.tensor([[2.0, 0.5, 0.1], [4.0, 0.2, 0.9]])
    tf = Normalize(3, bounds=torch.tensor([[0.0, 0.0, 0.0], [8.0, 1.0, 1.0]]))
    assert transform_dependencies(X, deps, tf) == {0: {0.25: [1], 0.5: [2]}}


def test_construct_inputs_passes_the_tree():
    X, Y = torch.rand(5, 3, dtype=torch.float64), torch.rand(5, 1, dtype=torch.float64)
    X[:, 0] = torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0])
    ds = SupervisedDataset(X, Y, feature_names=["a", "b", "c"], outcome_names=["y"])
    deps = {0: {0: [1], 1: [2]}}
    inputs = AddTreeGP.construct_inputs(ds, hierarchical_dependencies=deps)
    assert inputs["hierarchical_dependencies"].hierarchical_dependencies == deps
    model = AddTreeGP(**inputs)
    assert model.tree.num_vertices == 3
    assert not model.covar_module.shared_component
    inputs = AddTreeGP.construct_inputs(
        ds, hierarchical_dependencies=deps, shared_component=True
    )
    assert AddTreeGP(**inputs).covar_module.shared_component


def test_model_on_random_trees_fits_and_predicts(tree_case):
    d, deps = tree_case
    X = random_points(d, deps, 30, 0)
    Y = X.sum(-1, keepdim=True)
    model = AddTreeGP(X, Y, deps)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    model.eval()
    with torch.no_grad():
        vp = model.vertex_posterior(X)
        mean = model.posterior(X).mean.squeeze(-1)
    active = model.tree.vertex_activity(X).to(vp.mean)
    torch.testing.assert_close(
        (vp.mean * active).sum(-1) + vp.offset, mean, atol=1e-8, rtol=0
    )
    assert (vp.variance >= 0).all()


@pytest.mark.parametrize(
    "with_bounds, shared", [(True, False), (False, False), (True, True)]
)
def test_batched_training_data_match_separate_models(with_bounds, shared):
    problem = Jenatton()
    space = problem.space
    deps = space.to_hierarchical_dependencies()
    X = torch.stack([space.sample(10, seed=s) for s in (0, 1)])  # 2 x 10 x 9
    Y = problem(X).unsqueeze(-1)
    bounds = space.bounds if with_bounds else None
    batched = AddTreeGP(X, Y, deps, bounds=bounds, shared_component=shared)
    batched.covar_module.lengthscale = torch.tensor([[0.3], [0.7]]).unsqueeze(-2)
    if shared:  # different shared scales per batch member
        num_slots = batched.covar_module.tree.num_slots
        scales = torch.tensor([[0.2], [0.9]]).expand(2, num_slots)
        batched.covar_module.slot_outputscale = scales
    Z = space.sample(6, seed=2)
    batched.eval()
    with torch.no_grad():
        mean = batched.posterior(Z).mean  # 2 x 6 x 1
    for b in range(2):
        single = AddTreeGP(X[b], Y[b], deps, bounds=bounds, shared_component=shared)
        single.covar_module.lengthscale = batched.covar_module.lengthscale[b]
        if shared:
            scale = batched.covar_module.slot_outputscale[b].detach()
            single.covar_module.slot_outputscale = scale
        single.eval()
        with torch.no_grad():
            torch.testing.assert_close(single.posterior(Z).mean, mean[b])


def test_bad_model_inputs():
    with pytest.raises(ValueError, match="train_X must be"):
        AddTreeGP(
            torch.rand(3, dtype=torch.float64),
            torch.rand(3, 1, dtype=torch.float64),
            {},
        )
    d, deps = random_tree(0)
    with pytest.raises(ValueError, match="outside"):
        AddTreeGP(
            torch.rand(4, 2, dtype=torch.float64),
            torch.rand(4, 1, dtype=torch.float64),
            {0: {0: [7]}},
        )


def test_fast_posterior_matches_gpytorch_posterior():
    problem, model = fitted_jenatton_model(n=18, seed=7)
    Z = problem.space.sample(11, seed=8).unsqueeze(-2)  # 11 x 1 x d
    with torch.no_grad():
        post = model.posterior(Z)
        mean, var = model.posterior_mean_variance(Z)
    torch.testing.assert_close(mean, post.mean.squeeze(-1), atol=1e-9, rtol=0)
    torch.testing.assert_close(var, post.variance.squeeze(-1), atol=1e-9, rtol=1e-6)
    model.train()
    with pytest.raises(RuntimeError, match="eval"):
        model.posterior_mean_variance(Z)


def test_a_dependency_value_no_row_takes_is_warned_about():
    from treebo.add_tree.model import BranchWithoutDataWarning

    space = Jenatton().space
    X = space.sample(12, seed=0)
    Y = Jenatton()(X).unsqueeze(-1)
    deps = space.to_hierarchical_dependencies()
    with warnings.catch_warnings():
        warnings.simplefilter("error", BranchWithoutDataWarning)
        AddTreeGP(X, Y, deps)  # every branch has data
        AddTreeGP(X[:1], Y[:1], space.tree)  # a treebo space's tree: not checked
    root = space.columns["x1"].column
    shifted = {root: {v + 1: cs for v, cs in deps[root].items()}}
    shifted |= {p: b for p, b in deps.items() if p != root}
    with pytest.warns(BranchWithoutDataWarning, match=f"column {root} .* value 2"):
        AddTreeGP(X, Y, shifted)
