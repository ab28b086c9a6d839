"""AddTreeKernel with categorical, integer and shared parameters, against its
definition evaluated pair by pair."""

from __future__ import annotations

import pytest
import torch

from tests.add_tree.test_kernel import float64_kernel, gradcheck_parameters, randomize
from treebo import Categorical, Choice, Integer, Real, TreeSpace, Vertex
from treebo.add_tree import AddTreeKernel
from treebo.gp import stationary_correlation


def svm_like_space() -> TreeSpace:
    """Integers, categoricals and a parameter shared by two options."""
    gamma = Real("gamma", 0.0, 1.0)
    return TreeSpace(
        Vertex(
            [Real("lr", 0.0, 1.0), Categorical("scaler", ["none", "std", "minmax"])],
            [
                Choice(
                    "kernel",
                    {
                        "rbf": Vertex([gamma, Categorical("shrink", [True, False])]),
                        "poly": Vertex([gamma, Integer("degree", 2, 5)]),
                        "linear": Vertex(),
                    },
                ),
                Choice("flag", ["on", "off"]),
            ],
        )
    )


def brute_force(kernel: AddTreeKernel, space: TreeSpace, X1, X2) -> torch.Tensor:
    """Sum over vertices active at both points of sigma_v^2 kappa(r_v^2) + c_v,
    with r_v^2 = sum over v's numeric columns of ((x - x') / l)^2 plus, for each
    categorical column, [x != x'] / l^2."""
    tree = kernel.tree
    ls = kernel.lengthscale.detach()
    scale = kernel.effective_outputscale().detach()
    offset = kernel.effective_offset().detach()
    categorical = space.categorical_values
    active1, active2 = tree.vertex_activity(X1), tree.vertex_activity(X2)
    K = torch.zeros(X1.shape[0], X2.shape[0], dtype=torch.float64)
    for i in range(X1.shape[0]):
        for j in range(X2.shape[0]):
            for v in tree.vertices:
                if not (active1[i, v.index] and active2[j, v.index]):
                    continue
                K[i, j] += offset[v.index]
                if not v.continuous_columns:
                    continue
                r2 = torch.zeros((), dtype=torch.float64)
                for slot, c in enumerate(v.continuous_columns):
                    ell = ls[v.index, slot]
                    if c in categorical:
                        r2 = r2 + float(X1[i, c] != X2[j, c]) / ell**2
                    else:
                        r2 = r2 + ((X1[i, c] - X2[j, c]) / ell) ** 2
                K[i, j] += scale[v.index] * stationary_correlation(
                    r2, kernel.base_kernel
                )
    return K


@pytest.mark.parametrize("base_kernel", ["rbf", "matern52"])
def test_kernel_with_categoricals_and_shared_parameters_matches_its_definition(
    base_kernel,
):
    space = svm_like_space()
    kernel = float64_kernel(
        space.dim,
        space.to_hierarchical_dependencies(),
        base_kernel=base_kernel,
        vertex_bias="all",
        categorical_values=space.categorical_values,
    )
    randomize(kernel, seed=1)
    X1, X2 = space.sample(9, seed=0), space.sample(7, seed=1)
    with torch.no_grad():
        K = kernel(X1, X2).to_dense()
        diag = kernel(X1, X1, diag=True)
    torch.testing.assert_close(K, brute_force(kernel, space, X1, X2))
    torch.testing.assert_close(diag, brute_force(kernel, space, X1, X1).diagonal())
    # gamma's vertex is shared by rbf and poly: two such points share its term.
    gamma = space.columns["gamma"].column
    (vertex,) = [v for v in kernel.tree.vertices if gamma in v.continuous_columns]
    assert len(vertex.condition[1]) == 2
    rbf, poly = space.to_tensor(
        [
            {
                "lr": 0.5,
                "scaler": "std",
                "kernel": "rbf",
                "gamma": 0.3,
                "shrink": True,
                "flag": "on",
            },
            {
                "lr": 0.5,
                "scaler": "std",
                "kernel": "poly",
                "gamma": 0.3,
                "degree": 3,
                "flag": "on",
            },
        ]
    )
    assert bool(
        kernel.tree.vertex_activity(torch.stack([rbf, poly]))[:, vertex.index].all()
    )


def test_kernel_with_categoricals_is_psd_and_differentiable():
    space = svm_like_space()
    kernel = float64_kernel(
        space.dim,
        space.to_hierarchical_dependencies(),
        share_lengthscales="depth",
        shared_component=True,
        categorical_values=space.categorical_values,
    )
    randomize(kernel, seed=2)
    X = space.sample(40, seed=3)
    with torch.no_grad():
        K = kernel(X, X).to_dense()
    torch.testing.assert_close(K, K.T)
    assert torch.linalg.eigvalsh(K).min() > -1e-9
    # A batch of inputs gives the batch of Gram matrices.
    Xb = torch.stack([X[:10], X[10:20]])
    with torch.no_grad():
        Kb = kernel(Xb, Xb).to_dense()
    torch.testing.assert_close(Kb[1], K[10:20, 10:20])
    names = ["raw_lengthscale", "raw_outputscale", "raw_slot_outputscale"]
    assert gradcheck_parameters(kernel, names, X[:5], X[5:9])


def test_a_categorical_column_must_be_a_parameter_column():
    space = svm_like_space()
    kernel_col = space.columns["kernel"].column
    with pytest.raises(ValueError, match=f"column {kernel_col} is not a parameter"):
        float64_kernel(
            space.dim,
            space.to_hierarchical_dependencies(),
            categorical_values={kernel_col: [0.0, 1.0, 2.0]},
        )
