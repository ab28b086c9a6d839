import itertools

import pytest
import torch

from treebo.treed.partition import build_partition, group_by_size


def _data(n=60, d=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=gen, dtype=torch.float64)
    y = torch.where(X[:, 0] < 0.4, torch.sin(20 * X[:, 1]), 0.1 * X[:, 1])
    return X, y


def _gain(y, left, right):
    """Eq. 5 of paper 003, written out."""

    def u(mask):
        v = y[mask]
        return float(((v - v.mean()) ** 2).mean())

    whole = left | right
    n = int(whole.sum())
    return u(whole) - int(left.sum()) / n * u(left) - int(right.sum()) / n * u(right)


def test_splits_sit_on_data_points_that_both_children_keep():
    X, y = _data()
    part = build_partition(X, y, min_leaf_size=5)
    assert part.num_leaves > 2
    for node in (~part.is_leaf).nonzero().squeeze(-1).tolist():
        f, t = int(part.feature[node]), float(part.threshold[node])
        mine = part.members[node]
        on = mine & (X[:, f] == t)
        assert bool(on.any())  # the threshold is an observed value
        left, right = part.members[part.left[node]], part.members[part.right[node]]
        assert torch.equal(left, mine & (X[:, f] <= t))
        assert torch.equal(right, mine & (X[:, f] >= t))
        assert bool((left & right).eq(on).all())  # boundary points in both
    assert int(part.leaf_members.sum(-1).min()) >= 5


def test_root_split_maximizes_the_uncertainty_reduction():
    X, y = _data(n=30)
    part = build_partition(X, y, min_leaf_size=4)
    best, arg = -float("inf"), None
    for f in range(X.shape[1]):
        for t in X[:, f].tolist():
            left, right = X[:, f] <= t, X[:, f] >= t
            if min(int(left.sum()), int(right.sum())) < 4 or left.all() or right.all():
                continue
            g = _gain(y, left, right)
            if g > best + 1e-12:
                best, arg = g, (f, t)
    assert (int(part.feature[0]), float(part.threshold[0])) == arg


def test_min_leaf_size_and_max_depth_are_respected():
    X, y = _data(n=80)
    for size in (3, 7, 20):
        part = build_partition(X, y, min_leaf_size=size)
        assert int(part.leaf_members.sum(-1).min()) >= size
    shallow = build_partition(X, y, min_leaf_size=3, max_depth=2)
    assert shallow.max_depth <= 2 < build_partition(X, y, min_leaf_size=3).max_depth


def test_partition_is_deterministic_and_ignores_row_order():
    X, y = _data()
    a, b = build_partition(X, y), build_partition(X, y)
    for name in ("feature", "threshold", "left", "right", "members"):
        assert torch.equal(getattr(a, name).nan_to_num(), getattr(b, name).nan_to_num())
    perm = torch.randperm(X.shape[0], generator=torch.Generator().manual_seed(1))
    c = build_partition(X[perm], y[perm])
    assert torch.equal(a.feature, c.feature)
    torch.testing.assert_close(a.threshold, c.threshold, equal_nan=True)
    assert torch.equal(a.members[:, perm], c.members)


def test_membership_and_leaf_index_agree_with_the_training_memberships():
    X, y = _data()
    part = build_partition(X, y)
    assert torch.equal(part.membership(X).T, part.leaf_members)
    gen = torch.Generator().manual_seed(123)  # not the training data's stream
    Xq = torch.rand(4, 50, 2, generator=gen, dtype=torch.float64)
    leaf = part.leaf_index(Xq)
    assert leaf.shape == (4, 50)
    inside = part.membership(Xq).gather(-1, leaf.unsqueeze(-1)).squeeze(-1)
    assert bool(inside.all())
    # Away from thresholds, a point lies in exactly one cell.
    assert bool((part.membership(Xq).sum(-1) == 1).all())


def test_a_constant_outcome_or_too_few_points_give_one_leaf():
    X, _ = _data(n=20)
    assert build_partition(X, torch.ones(20, dtype=torch.float64)).num_leaves == 1
    X, y = _data(n=9)  # 5 + 5 with the shared boundary point
    assert build_partition(X, y, min_leaf_size=5).num_leaves == 2
    X, y = _data(n=8)
    part = build_partition(X, y, min_leaf_size=5)
    assert part.num_leaves == 1
    assert bool(part.membership(X).all())


def test_bad_input_is_refused():
    X, y = _data(n=10)
    with pytest.raises(ValueError, match="min_leaf_size"):
        build_partition(X, y, min_leaf_size=0)
    with pytest.raises(TypeError, match="min_leaf_size"):
        build_partition(X, y, min_leaf_size=True)
    with pytest.raises(ValueError, match="n x d"):
        build_partition(X[:, 0], y)
    with pytest.raises(ValueError, match="rows"):
        build_partition(X, y[:5])


def test_partition_ignores_an_affine_change_of_the_outcomes():
    X, y = _data()
    a, b = build_partition(X, y), build_partition(X, 1e3 * y + 1e6)
    assert torch.equal(a.feature, b.feature)
    torch.testing.assert_close(a.threshold, b.threshold, equal_nan=True)


def test_a_split_test_can_veto_splits():
    X, y = _data()
    seen = []

    def only_the_root(parents, children):
        seen.append((parents.shape, children.shape))
        assert bool((children.any(dim=1) == parents).all())  # children cover
        return parents.sum(-1) == X.shape[0]

    part = build_partition(X, y, split_test=only_the_root)
    assert part.num_leaves == 2 and part.max_depth == 1
    assert seen[0] == ((1, 60), (1, 2, 60))
    vetoed = build_partition(X, y, split_test=lambda p, c: torch.zeros_like(p[:, 0]))
    assert vetoed.num_leaves == 1


def _fields(part):
    return (part.feature, part.left, part.right, part.parent, part.depth, part.members)


def test_pruning_below_a_depth_equals_growing_to_that_depth():
    X, y = _data(n=80)
    full = build_partition(X, y, min_leaf_size=5)
    assert full.max_depth >= 3
    for depth in (0, 1, 2):
        pruned = full.prune(full.depth >= depth)
        grown = build_partition(X, y, min_leaf_size=5, max_depth=depth)
        for a, b in zip(_fields(pruned), _fields(grown), strict=True):
            assert torch.equal(a, b)
        assert torch.equal(pruned.threshold.nan_to_num(), grown.threshold.nan_to_num())
    with pytest.raises(ValueError, match="one entry per node"):
        full.prune(torch.zeros(3, dtype=torch.bool))


def test_shared_weights_halve_boundary_points_and_sum_to_one_over_any_cut():
    X, y = _data(n=80)
    X[:, 0] = (X[:, 0] * 8).round() / 8  # many ties: many boundary points
    part = build_partition(X, y, min_leaf_size=5)
    weight = part.shared_weights()
    assert bool((weight[part.members] > 0).all()) and bool(
        (weight[~part.members] == 0).all()
    )
    for node in (~part.is_leaf).nonzero().squeeze(-1).tolist():
        kids = weight[part.left[node]] + weight[part.right[node]]
        assert torch.allclose(kids, weight[node])
        both = part.members[part.left[node]] & part.members[part.right[node]]
        assert torch.equal(weight[part.left[node]][both], weight[node][both] / 2)
    assert bool(
        (part.members[part.left] & part.members[part.right])[~part.is_leaf].any()
    )
    assert torch.allclose(weight[part.leaves].sum(0), torch.ones(80, dtype=X.dtype))


def _batching_cost(sizes, batch, batch_cost):
    return sum(
        batch_cost + int((batch == b).sum()) * int(sizes[batch == b].max()) ** 3
        for b in batch.unique()
    )


@pytest.mark.parametrize("seed", range(4))
def test_group_by_size_finds_the_cheapest_runs_of_sorted_sizes(seed):
    gen = torch.Generator().manual_seed(seed)
    sizes = torch.randint(1, 60, (9,), generator=gen)
    batch_cost = 40.0**3
    batch = group_by_size(sizes, batch_cost)
    # Batches are runs of the sorted sizes, numbered in increasing size.
    order = sizes.argsort(stable=True)
    assert bool((batch[order].diff() >= 0).all())
    assert batch.unique().tolist() == list(range(int(batch.max()) + 1))
    # Brute force over every cut of the distinct sorted sizes.
    distinct = sizes.unique()

    def batches(cuts):  # batch b holds the sizes between cuts b-1 and b
        edges = distinct[[c - 1 for c in cuts]]
        return torch.searchsorted(edges, sizes, right=False)

    best = min(
        _batching_cost(sizes, batches(cuts), batch_cost)
        for k in range(len(distinct))
        for cuts in itertools.combinations(range(1, len(distinct)), k)
    )
    assert _batching_cost(sizes, batch, batch_cost) == best
