"""ChoiceInteractionKernel against its definition, and inside AddTreeKernel."""

from __future__ import annotations

import pytest
import torch

from treebo.kernels import AddTreeKernel, ChoiceInteractionKernel
from treebo.kernels.choice_interactions import choice_pairs
from treebo.kernels.options import AddTreeKernelOptions
from treebo.parameters import Choice, Real, Vertex
from treebo.space import TreeSpace
from treebo.strategies import AddTreeUCBOptions
from treebo.test_functions import Jenatton


def pipeline_space() -> TreeSpace:
    """Three choices at the root (one of them nested below a model), so the
    root has three pairs and the nested vertex none."""
    model = Choice(
        "model",
        {
            "svm": Vertex([Real("C", 0.0, 1.0)], [Choice("kernel", ["rbf", "lin"])]),
            "tree": Vertex([Real("depth", 0.0, 1.0)]),
            "knn": Vertex(),
        },
    )
    prep = Choice(
        "prep", {"none": Vertex(), "pca": Vertex([Real("variance", 0.5, 1.0)])}
    )
    scale = Choice(
        "scale",
        {"std": Vertex(), "minmax": Vertex(), "clip": Vertex([Real("q", 0.9, 1.0)])},
    )
    return TreeSpace(Vertex(choices=[prep, model, scale]))


def brute_force(kernel: ChoiceInteractionKernel, space: TreeSpace, X1, X2):
    """The definition, one pair of points and one pair of choices at a time."""
    tree = space.tree
    c = kernel.offset.detach()
    active1 = tree.vertex_activity(X1)
    active2 = tree.vertex_activity(X2)
    K = torch.zeros(X1.shape[0], X2.shape[0], dtype=X1.dtype)
    for p, (u, j, k) in enumerate(choice_pairs(tree).tolist()):
        for a in range(X1.shape[0]):
            for b in range(X2.shape[0]):
                if (
                    active1[a, u]
                    and active2[b, u]
                    and X1[a, j] == X2[b, j]
                    and X1[a, k] == X2[b, k]
                ):
                    K[a, b] += c[p]
    return K


def test_pairs_are_the_choices_of_one_vertex():
    space = pipeline_space()
    pairs = choice_pairs(space.tree)
    assert pairs.shape == (3, 3)  # three root choices: three pairs
    assert pairs[:, 0].tolist() == [0, 0, 0]
    assert choice_pairs(Jenatton().space.tree).shape == (0, 3)


def test_gram_equals_the_definition_and_is_psd():
    space = pipeline_space()
    kernel = ChoiceInteractionKernel(space.tree).to(torch.float64)
    kernel.offset = torch.tensor([0.3, 0.05, 1.2])
    X1, X2 = space.sample(40, seed=0), space.sample(17, seed=1)
    K = kernel(X1, X2).to_dense()
    torch.testing.assert_close(K, brute_force(kernel, space, X1, X2))
    assert K.abs().sum() > 0  # some pairs of points share options
    K11 = kernel(X1, X1).to_dense()
    torch.testing.assert_close(K11, K11.mT)
    assert torch.linalg.eigvalsh(K11).min() > -1e-10
    torch.testing.assert_close(kernel(X1, X1, diag=True), K11.diagonal())
    torch.testing.assert_close(K11.diagonal(), torch.full((40,), 1.55).double())


def test_batches_broadcast():
    space = pipeline_space()
    kernel = ChoiceInteractionKernel(space.tree).to(torch.float64)
    Xb = torch.stack([space.sample(6, seed=s) for s in range(3)])  # 3 x 6 x d
    X2 = space.sample(5, seed=9)
    K = kernel(Xb, X2).to_dense()
    assert K.shape == (3, 6, 5)
    for b in range(3):
        torch.testing.assert_close(K[b], kernel(Xb[b], X2).to_dense())


def test_gradient_of_each_offset_is_its_indicator():
    space = pipeline_space()
    kernel = ChoiceInteractionKernel(space.tree).to(torch.float64)
    X = space.sample(12, seed=3)
    W = torch.randn(12, 12, dtype=torch.float64)
    (kernel(X, X).to_dense() * W).sum().backward()
    grad = kernel.raw_offset.grad
    unit = ChoiceInteractionKernel(space.tree).to(torch.float64)
    for p in range(3):
        c = torch.full((3,), 1e-6, dtype=torch.float64)
        c[p] = 1.0
        unit.offset = c
        indicator = (unit(X, X).to_dense() > 0.5).double()
        # d/d raw = d/d offset * d offset / d raw (softplus: sigmoid(raw)).
        expected = (indicator * W).sum() * torch.sigmoid(kernel.raw_offset[p])
        torch.testing.assert_close(grad[p], expected.detach())


def test_add_tree_kernel_adds_the_offsets_where_there_are_pairs():
    space = pipeline_space()
    deps = space.to_hierarchical_dependencies()
    X = space.sample(15, seed=4)
    plain = AddTreeKernel(space.dim, deps, tree=space.tree).double()
    mixed = AddTreeKernel(
        space.dim, deps, tree=space.tree, choice_interactions=True
    ).double()
    extra = mixed.choice_interaction(X, X).to_dense()
    torch.testing.assert_close(mixed(X, X).to_dense(), plain(X, X).to_dense() + extra)
    with pytest.raises(NotImplementedError, match="choice_interactions"):
        mixed.vertex_prior_variance()
    with pytest.raises(NotImplementedError, match="choice_interactions"):
        mixed.vertex_covariance(X[:2], X)
    # A plain tree has no vertex with two choices: nothing is added.
    jen = Jenatton().space
    kernel = AddTreeKernel(
        jen.dim, jen.to_hierarchical_dependencies(), choice_interactions=True
    )
    assert kernel.choice_interaction is None


def test_bad_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="two or more choices"):
        ChoiceInteractionKernel(Jenatton().space.tree)
    with pytest.raises(ValueError, match="choice_interactions"):
        AddTreeKernelOptions(choice_interactions="yes")
    with pytest.raises(ValueError, match="choice_interactions"):
        AddTreeUCBOptions(kernel=AddTreeKernelOptions(choice_interactions=True))
