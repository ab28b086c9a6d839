"""BoTorch's hierarchical_dependencies read into a space."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import random_tree
from treebo import (
    TreeSpace,
)


@pytest.mark.parametrize("seed", range(5))
def test_from_hierarchical_dependencies_round_trip(seed):
    d, deps = random_tree(seed, allow_multi_choice=True)
    bounds = torch.stack([-torch.ones(d), 2 * torch.ones(d)])
    space = TreeSpace.from_hierarchical_dependencies(deps, bounds)
    # A choice whose values activate nothing is a categorical, not a branch.
    branching = {p: b for p, b in deps.items() if any(b.values())}
    assert space.to_hierarchical_dependencies() == branching
    assert space.categorical_values == {
        p: [float(v) for v in b] for p, b in deps.items() if p not in branching
    }
    assert space.parameter_names == [f"x{i}" for i in range(d)]
    X = space.sample(5, seed=seed)
    torch.testing.assert_close(space.to_tensor(space.to_dicts(X)), X)


def test_from_hierarchical_dependencies_keeps_values_and_names():
    deps = {2: {3: [0], 7: [1]}}
    bounds = torch.tensor([[0.0, 0.0, 0.0], [1.0, 5.0, 0.0]], dtype=torch.float64)
    space = TreeSpace.from_hierarchical_dependencies(
        deps, bounds, names=["a", "b", "c"]
    )
    x = space.to_tensor({"c": 7, "b": 2.5})
    torch.testing.assert_close(x, torch.tensor([0.0, 2.5, 7.0], dtype=torch.float64))
    assert space.to_dict(x) == {"b": 2.5, "c": 7}
