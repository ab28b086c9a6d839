"""Random and quasi-random configurations of spaces with integers and labels."""

from __future__ import annotations

import torch

from treebo import Categorical, Choice, Integer, Real, TreeSpace, Vertex


def small_space() -> TreeSpace:
    return TreeSpace(
        Vertex(
            [Integer("n", 1, 4), Categorical("c", ["a", "b", "c"])],
            [Choice("branch", {"x": Vertex([Real("r", 0, 1)]), "y": Vertex()})],
        )
    )


def test_integers_and_labels_are_uniform():
    space = small_space()
    X = space.sample(12000, seed=0)
    for name, k in (("n", 4), ("c", 3), ("branch", 2)):
        column = X[:, space.columns[name].column]
        counts = torch.unique(column, return_counts=True)[1].double()
        assert counts.numel() == k
        # Every value's share within 4 standard errors of 1 / k.
        share = counts / X.shape[0]
        sd = (1 / k * (1 - 1 / k) / X.shape[0]) ** 0.5
        assert ((share - 1 / k).abs() < 4 * sd).all(), (name, share)


def test_from_unit_cube_stratifies_every_column():
    space = small_space()
    n = 12
    U = (torch.arange(n, dtype=torch.float64) + 0.5).div(n).unsqueeze(-1)
    X = space.from_unit_cube(U.expand(n, space.dim).clone())
    configs = space.to_dicts(X)
    # Equal thirds, quarters and halves of a stratified column.
    assert [c["n"] for c in configs] == [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]
    assert [c["c"] for c in configs] == ["a"] * 4 + ["b"] * 4 + ["c"] * 4
    assert [c["branch"] for c in configs] == ["x"] * 6 + ["y"] * 6
    assert torch.equal(space.canonicalize(X), X)
