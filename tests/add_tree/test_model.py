"""AddTreeGP: drop-in behaviour and per-vertex posteriors."""

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
from treebo.add_tree.model import transform_dependencies
from treebo.test_functions import GeneralizedJenatton, Jenatton


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
