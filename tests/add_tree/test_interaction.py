"""AncestorInteractionKernel against App. E as a loop, and the sum it is used in."""

from __future__ import annotations

import pytest
import torch
from gpytorch.kernels import AdditiveKernel, RBFKernel

from tests.add_tree.test_kernel import gradcheck_parameters, randomize
from tests.conftest import random_points, random_tree
from treebo.add_tree import (
    AddTreeGP,
    AddTreeKernel,
    AddTreeKernelSum,
    AncestorInteractionKernel,
)
from treebo.add_tree.features import interacting_vertices
from treebo.add_tree.interaction import INTERACTION_SCALE
from treebo.gp import stationary_correlation


def _on(tree, v: int, x: torch.Tensor) -> bool:
    return all(
        any(abs(x[c] - val) < 1e-9 for val in values)
        for c, values in tree.vertex_conditions(v)
    )


def brute_force_interaction_gram(kernel: AncestorInteractionKernel, X1, X2):
    """App. E's interaction terms as a loop: for each vertex with parameters
    below a vertex with parameters, rho_v kappa on the path's columns."""
    ls, rho = kernel.lengthscale.detach(), kernel.outputscale.detach()
    vertices = kernel.tree.vertices
    K = torch.zeros(X1.shape[0], X2.shape[0], dtype=torch.float64)
    for v in vertices:
        cols, parent = list(v.continuous_columns), v.parent
        while parent is not None:
            cols += vertices[parent].continuous_columns
            parent = vertices[parent].parent
        if not v.continuous_columns or len(cols) == len(v.continuous_columns):
            continue  # no parameters, or none above
        scale = ls[v.index, : len(cols)]
        for i in range(X1.shape[0]):
            for j in range(X2.shape[0]):
                if _on(kernel.tree, v.index, X1[i]) and _on(
                    kernel.tree, v.index, X2[j]
                ):
                    r2 = (((X1[i, cols] - X2[j, cols]) / scale) ** 2).sum()
                    K[i, j] += rho[v.index] * stationary_correlation(
                        r2, kernel.base_kernel
                    )
    return K


def interacting_case(tree_case):
    d, deps = tree_case
    if not bool(interacting_vertices(AddTreeKernel(d, deps).tree).any()):
        pytest.skip("no vertex with parameters below another")
    return d, deps


@pytest.mark.parametrize("base_kernel", ["rbf", "matern52"])
@pytest.mark.parametrize("share", ["none", "depth"])
def test_interaction_terms_match_brute_force(tree_case, base_kernel, share):
    d, deps = interacting_case(tree_case)
    kwargs = dict(
        base_kernel=base_kernel, share_lengthscales=share, share_outputscales=share
    )
    interaction = AncestorInteractionKernel(d, deps, **kwargs).double()
    # Initially the terms' output scales are a tenth of 1 / (vertices on a path).
    path_len = interaction.tree.max_active_vertices()
    expected = torch.full_like(interaction.outputscale, INTERACTION_SCALE / path_len)
    torch.testing.assert_close(interaction.outputscale.detach(), expected)
    randomize(interaction, 4)
    X1, X2 = random_points(d, deps, 8, 5), random_points(d, deps, 6, 6)
    K = interaction(X1, X2).to_dense().detach()
    extra = brute_force_interaction_gram(interaction, X1, X2)
    torch.testing.assert_close(K, extra, atol=1e-10, rtol=0)
    assert extra.abs().max() > 1e-3
    diag = interaction(X1, X1, diag=True).detach()
    torch.testing.assert_close(
        diag, brute_force_interaction_gram(interaction, X1, X1).diag()
    )
    assert torch.linalg.eigvalsh(interaction(X1).to_dense().detach()).min() > -1e-10


@pytest.mark.parametrize("loop_options", [False, True])
def test_a_sum_adds_the_grams_and_the_vertex_components(tree_case, loop_options):
    d, deps = interacting_case(tree_case)
    kwargs = {}
    if loop_options:
        kwargs = dict(
            vertex_bias="all",
            shared_component=True,
            share_lengthscales="depth",
            share_outputscales="depth",
        )
    plain = AddTreeKernel(d, deps, **kwargs).double()
    interaction = AncestorInteractionKernel(d, deps).double()
    randomize(plain, 3)
    randomize(interaction, 4)
    kernel = plain + interaction
    assert isinstance(kernel, AddTreeKernelSum)
    assert kernel.reads_ancestors and not plain.reads_ancestors
    X1, X2 = random_points(d, deps, 8, 5), random_points(d, deps, 6, 6)
    K = kernel(X1, X2).to_dense().detach()
    expected = plain(X1, X2).to_dense() + interaction(X1, X2).to_dense()
    torch.testing.assert_close(K, expected.detach(), atol=0, rtol=0)
    features = kernel.slot_features(X1), kernel.slot_features(X2)
    read = kernel.forward(X1, X2, x1_features=features[0], x2_features=features[1])
    torch.testing.assert_close(read.detach(), K, atol=0, rtol=0)
    # Summing the per-vertex components over the vertices active at z gives k.
    kv = kernel.vertex_covariance(X2, X1).detach()
    active = kernel.tree.vertex_activity(X2)
    full = (kv * active.unsqueeze(-1)).sum(-2)
    torch.testing.assert_close(full, K.T)
    prior = kernel.vertex_prior_variance().detach()
    kxx = kernel.vertex_covariance(X1, X1).detach().diagonal(dim1=0, dim2=2).T
    active = kernel.tree.vertex_activity(X1)
    torch.testing.assert_close(kxx[active], prior.expand_as(kxx)[active])
    assert torch.equal(
        kernel.vertex_contributes,
        plain.vertex_contributes | interaction.vertex_contributes,
    )


def test_interaction_gradients():
    d, deps = random_tree(4, max_depth=3)
    kernel = (
        AddTreeKernel(d, deps).double() + AncestorInteractionKernel(d, deps).double()
    )
    randomize(kernel.kernels[0], 1)
    randomize(kernel.kernels[1], 2)
    X1, X2 = random_points(d, deps, 5, 8), random_points(d, deps, 4, 9)
    names = ("kernels.1.raw_lengthscale", "kernels.1.raw_outputscale")
    assert gradcheck_parameters(kernel, names, X1, X2)


def test_a_single_kernels_state_loads_into_the_first_summand():
    deps = {0: {0: [1, 2], 1: [3]}, 2: {0: [4], 1: [5]}}
    plain = AddTreeKernel(6, deps).double()
    randomize(plain, 5)
    kernel = AddTreeKernel(6, deps).double() + AncestorInteractionKernel(6, deps)
    before = kernel.kernels[1].raw_lengthscale.detach().clone()
    missing, unexpected = kernel.load_state_dict(plain.state_dict(), strict=False)
    assert not unexpected and all(k.startswith("kernels.1.") for k in missing)
    torch.testing.assert_close(kernel.kernels[0].lengthscale, plain.lengthscale)
    assert torch.equal(kernel.kernels[1].raw_lengthscale, before)


def test_the_model_adds_interactions_only_where_a_vertex_interacts():
    X = torch.tensor(
        [
            [0.0, 0.1, 0.0, 0.0, 0.2, 0.0],
            [0.0, 0.3, 1.0, 0.0, 0.0, 0.4],
            [1.0, 0.0, 0.0, 0.5, 0.0, 0.0],
        ],
        dtype=torch.float64,
    )
    Y = torch.tensor([[0.3], [0.1], [0.9]], dtype=torch.float64)
    nested = {0: {0: [1, 2], 1: [3]}, 2: {0: [4], 1: [5]}}
    model = AddTreeGP(X, Y, nested, ancestor_interactions=True)
    assert isinstance(model.covar_module, AddTreeKernelSum)
    flat = {0: {0: [1, 2, 4], 1: [3, 5]}}
    model = AddTreeGP(X, Y, flat, ancestor_interactions=True)
    assert type(model.covar_module) is AddTreeKernel


def test_sums_refuse_other_kernels_and_other_trees():
    deps = {0: {0: [1], 1: [2]}}
    kernel = AddTreeKernel(3, deps)
    assert isinstance(kernel + RBFKernel(), AdditiveKernel)
    with pytest.raises(TypeError, match="adds Add-Tree kernels"):
        AddTreeKernelSum(kernel, RBFKernel())
    with pytest.raises(ValueError, match="share their columns and tree"):
        kernel + AddTreeKernel(3, {0: {0: [1, 2]}})
    with pytest.raises(ValueError, match="at least two"):
        AddTreeKernelSum(kernel)
    three = kernel + AddTreeKernel(3, deps) + AddTreeKernel(3, deps)
    assert len(three.kernels) == 3
