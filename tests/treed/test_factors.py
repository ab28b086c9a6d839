import torch

from treebo.treed.factors import build_factor_groups
from treebo.treed.partition import build_partition


def _partition(seed: int = 0, n: int = 60):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 2, generator=g, dtype=torch.float64)
    y = torch.where(X[:, 0] < 0.5, torch.sin(12 * X[:, 1]), X[:, 1] ** 2)
    return X, y, build_partition(X, y.unsqueeze(-1), min_leaf_size=5)


def test_each_leafs_factors_split_every_point_once():
    # A leaf's factors, level by level up its path, hold the points of one
    # node and not of the node below it: together, every point exactly once.
    X, y, partition = _partition()
    assert partition.num_leaves > 2
    counts = torch.zeros(partition.num_leaves, X.shape[0], dtype=torch.long)
    for group in build_factor_groups(partition, X, y):
        rows = group.mask.bool()
        for leaf, index, keep in zip(group.leaf, group.index, rows, strict=True):
            counts[leaf].index_add_(0, index[keep], torch.ones_like(index[keep]))
    assert torch.equal(counts, torch.ones_like(counts))


def test_factors_carry_their_rows_data_and_weights():
    X, y, partition = _partition(seed=1)
    for group in build_factor_groups(partition, X, y):
        mask = group.mask
        assert torch.equal(group.inputs, X[group.index])
        assert torch.equal(group.rhs[..., 0], y[group.index] * mask)
        assert torch.equal(group.rhs[..., 1], mask)
        # weight 2 / (1 + level): 2 at the leaf, 1 at its parent, ...
        levels = 2.0 / group.weight - 1.0
        assert torch.allclose(levels, levels.round())
        assert group.inputs.dtype == X.dtype
