import pytest
import torch

from tests.conftest import random_tree
from treebo.add_tree.sharing import first_of_groups, fold_prior_sample, sharing_groups
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
