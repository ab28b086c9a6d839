"""The kernel's hyper-parameters: sharing groups, priors, constraints."""

import math

import pytest
import torch

from tests.conftest import random_tree
from treebo.add_tree import AddTreeKernel
from treebo.add_tree.hyperparameters import (
    first_of_groups,
    fold_prior_sample,
    sharing_groups,
)
from treebo.space import TreeStructure


@pytest.mark.parametrize("seed", range(4))
def test_groups_are_vertices_depths_or_one(seed):
    tree = TreeStructure(*random_tree(seed))
    V = tree.num_vertices
    assert torch.equal(sharing_groups(tree, "none", "s"), torch.arange(V))
    assert torch.equal(
        sharing_groups(tree, "all", "s"), torch.zeros(V, dtype=torch.long)
    )
    depth = sharing_groups(tree, "depth", "s")
    for u in range(V):
        for v in range(V):
            same = tree.vertices[u].depth == tree.vertices[v].depth
            assert bool(depth[u] == depth[v]) == same
    first = first_of_groups(depth)
    assert torch.equal(depth[first], torch.arange(len(first)))
    assert all(
        int(first[g]) == int((depth == g).nonzero()[0]) for g in range(len(first))
    )
    with pytest.raises(ValueError, match="share_x must be one of"):
        sharing_groups(tree, "some", "share_x")


def test_fold_prior_sample_fills_the_shape_with_whole_prior_draws():
    draws = torch.arange(24.0).reshape(4, 2, 3)  # 4 draws of a 2 x 3 prior
    assert torch.equal(fold_prior_sample(draws, torch.Size([2, 3])), draws[0])
    folded = fold_prior_sample(draws.reshape(2, 2, 2, 3), torch.Size([2, 2, 3]))
    assert torch.equal(folded, draws[:2])


def test_the_default_lengthscale_prior_is_dimension_scaled_per_group():
    # Root: 2 parameters; two leaves of 1 and 3 parameters (no sharing).
    deps = {2: {0: [3], 1: [4, 5, 6]}}
    kernel = AddTreeKernel(7, deps).double()
    tree = TreeStructure(7, deps)
    dims = tree.vertex_dims.clamp_min(1).to(torch.float64)
    loc = kernel.lengthscale_prior.base_dist.loc
    expected = math.sqrt(2.0) + 0.5 * dims.log()
    torch.testing.assert_close(loc[:, 0], expected)
    # The initial lengthscales are the prior's mode.
    mode = torch.exp(loc - kernel.lengthscale_prior.base_dist.scale**2)
    mask = tree.vertex_column_mask
    # (created in the default dtype, then cast: float32 round-off)
    torch.testing.assert_close(kernel.lengthscale[mask], mode[mask], rtol=1e-6, atol=0)


def test_outputscale_prior_centres_the_path_variance_at_one():
    deps = {0: {0: [1, 2], 1: [3, 4]}, 2: {0: [5], 1: [6]}, 4: {0: [7], 1: [8]}}
    kernel = AddTreeKernel(9, deps).double()
    # at most 2 vertices with parameters on a path: LogNormal(log(1/2), 1)
    loc = kernel.outputscale_prior.base_dist.loc
    torch.testing.assert_close(loc, torch.tensor(math.log(0.5), dtype=loc.dtype))
