"""Test problems: values against the hand-written definitions, known optima."""

from __future__ import annotations

import pytest
import torch

from treebo.test_functions import PAPER_001_TREES, GeneralizedJenatton, Jenatton


def jenatton_reference(c: dict) -> float:
    if c["x1"] == 0:
        leaf = c["x4"] ** 2 + 0.1 if c["x2"] == 0 else c["x5"] ** 2 + 0.2
        return leaf + c["r8"]
    leaf = c["x6"] ** 2 + 0.3 if c["x3"] == 0 else c["x7"] ** 2 + 0.4
    return leaf + c["r9"]


@pytest.mark.parametrize("variant", ["paper", "ax"])
def test_jenatton_matches_its_definition(variant):
    problem = Jenatton(variant)
    X = problem.space.sample(200, seed=0)
    values = problem(X)
    configs = problem.space.to_dicts(X)
    expected = torch.tensor([jenatton_reference(c) for c in configs], dtype=X.dtype)
    torch.testing.assert_close(values, expected)
    opt = torch.tensor(problem._optimizers, dtype=torch.float64)
    assert float(problem(opt)) == pytest.approx(problem.optimal_value)
    assert (values >= problem.optimal_value - 1e-12).all()
    lo, up = problem.space.bounds[:, 5]
    assert (float(lo), float(up)) == ((-1.0, 1.0) if variant == "paper" else (0.0, 1.0))


SHARED = {
    "linear": lambda r: r,
    "quadratic": lambda r: 4 * (r - 0.5) ** 2,
}


@pytest.mark.parametrize("shared", ["linear", "quadratic", "none"])
@pytest.mark.parametrize("balanced", [True, False])
def test_generalized_jenatton_matches_a_walk_down_the_tree(balanced, shared):
    problem = GeneralizedJenatton(depth=4, balanced=balanced, shared=shared)
    space = problem.space
    assert space.num_paths == (8 if balanced else 4)
    leaves = [v for v in space.vertices if not v.choices]
    rank = {v.params[0].name: i + 1 for i, v in enumerate(leaves)}
    inner = [v for v in space.vertices if v.choices]
    assert all(len(v.params) == (shared != "none") for v in inner)

    def reference(c: dict) -> float:
        total, vertex = 0.0, space.root
        while vertex.choices:
            if shared != "none":
                total += SHARED[shared](c[vertex.params[0].name])
            vertex = vertex.choices[0].options[c[vertex.choices[0].name]]
        name = vertex.params[0].name
        return total + c[name] ** 2 + 0.1 * rank[name]

    X = space.sample(100, seed=1)
    expected = torch.tensor([reference(c) for c in space.to_dicts(X)], dtype=X.dtype)
    torch.testing.assert_close(problem(X), expected)
    assert float(
        problem(torch.tensor(problem._optimizers, dtype=torch.float64))
    ) == pytest.approx(0.1)
    assert problem.objective(space.to_dict(torch.tensor(problem._optimizers[0]))) == (
        pytest.approx(0.1)
    )


def test_the_paper_001_trees_have_the_papers_leaf_counts_and_optimum():
    leaves = {"small_balanced": 4, "small_unbalanced": 3,
              "large_balanced": 8, "large_unbalanced": 9}  # fmt: skip
    assert len(PAPER_001_TREES) == 12
    for name, (depth, balanced, shared) in PAPER_001_TREES.items():
        problem = GeneralizedJenatton(depth, balanced, shared=shared)
        assert problem.space.num_paths == leaves[name.rsplit("_", 1)[0]]
        optimum = torch.tensor(problem._optimizers, dtype=torch.float64)
        assert float(problem(optimum)) == pytest.approx(0.1)
        assert (problem(problem.space.sample(300, seed=0)) >= 0.1 - 1e-12).all()


def test_bad_problem_arguments():
    with pytest.raises(ValueError, match="variant"):
        Jenatton("other")
    with pytest.raises(ValueError, match="depth"):
        GeneralizedJenatton(depth=1)
    with pytest.raises(ValueError, match="shared"):
        GeneralizedJenatton(shared="cubic")
