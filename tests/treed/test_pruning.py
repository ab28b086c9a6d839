import itertools
import math

import pytest
import torch

from treebo.gp.correlation import stationary_correlation
from treebo.treed.partition import build_partition
from treebo.treed.pruning import (
    LOO_LENGTHSCALES,
    LOO_NUGGETS,
    loo_prune,
    loo_squared_errors,
)


def _brute_force_loo(X, y):
    """REML over the grid by explicit inverses, then each point predicted by
    the GP (GLS mean re-estimated) of the others."""
    m = X.shape[0]
    one = torch.ones(m, dtype=X.dtype)
    best = (-math.inf, None)
    for ls, nug in itertools.product(LOO_LENGTHSCALES, LOO_NUGGETS):
        C = stationary_correlation(torch.cdist(X, X).square() / ls**2, "matern52")
        K = C + nug * torch.eye(m, dtype=X.dtype)
        Ki = torch.linalg.inv(K)
        mu = (one @ Ki @ y) / (one @ Ki @ one)
        r = y - mu
        reml = (
            -0.5 * (m - 1) * math.log(float(r @ Ki @ r) / (m - 1))
            - 0.5 * float(torch.logdet(K))
            - 0.5 * math.log(float(one @ Ki @ one))
        )
        if reml > best[0]:
            best = (reml, K)
    K = best[1]
    errors = []
    for i in range(m):
        o = torch.arange(m) != i
        Ko_inv = torch.linalg.inv(K[o][:, o])
        mu = (one[o] @ Ko_inv @ y[o]) / (one[o] @ Ko_inv @ one[o])
        pred = mu + K[i, o] @ Ko_inv @ (y[o] - mu)
        errors.append(float((y[i] - pred) ** 2))
    return torch.tensor(errors, dtype=X.dtype)


def test_loo_errors_equal_refitting_without_each_point():
    gen = torch.Generator().manual_seed(0)
    X = torch.rand(30, 2, generator=gen, dtype=torch.float64)
    y = torch.sin(6 * X[:, 0]) + 0.3 * torch.randn(30, generator=gen, dtype=X.dtype)
    masks = torch.stack([X[:, 0] < 2, X[:, 0] < 0.5, X[:, 1] >= 0.3])
    errors, index, valid = loo_squared_errors(X, y, masks)
    for s in range(3):
        rows = masks[s].nonzero().squeeze(-1)
        assert torch.equal(index[s][valid[s]], rows)
        expected = _brute_force_loo(X[rows], y[rows])
        assert torch.allclose(errors[s][valid[s]], expected, rtol=1e-6, atol=1e-10)
        assert bool((errors[s][~valid[s]] == 0).all())


def _score(part, own, node):
    """All prunings of the subtree at ``node``: (score, set of inner nodes)."""
    options = [(float(own[node]), frozenset())]
    if not bool(part.is_leaf[node]):
        left = _score(part, own, int(part.left[node]))
        right = _score(part, own, int(part.right[node]))
        for (a, sa), (b, sb) in itertools.product(left, right):
            options.append((a + b, sa | sb | {node}))
    return options


def test_pruning_keeps_the_subtree_with_the_lowest_loo_error():
    gen = torch.Generator().manual_seed(3)
    X = torch.rand(70, 1, generator=gen, dtype=torch.float64)
    y = torch.where(X[:, 0] < 0.5, torch.sin(40 * X[:, 0]), X[:, 0])
    full = build_partition(X, y, min_leaf_size=5, max_depth=3)
    pruned = loo_prune(full, X, y)
    ys = (y - y.mean()) / y.std()
    errors, index, valid = loo_squared_errors(X, ys, full.members)
    own = (errors * full.shared_weights().gather(-1, index) * valid).sum(-1)
    options = _score(full, own, 0)
    best_score, best_inner = min(options, key=lambda o: o[0])
    assert 1 < pruned.num_leaves < full.num_leaves
    # the kept tree is the best pruning: the same splits (as member sets)
    kept = {
        tuple(pruned.members[v].tolist())
        for v in range(pruned.num_nodes)
        if not bool(pruned.is_leaf[v])
    }
    assert kept == {tuple(full.members[v].tolist()) for v in best_inner}
    leaves = [tuple(pruned.members[v].tolist()) for v in pruned.leaves.tolist()]
    rows = [tuple(full.members[v].tolist()) for v in range(full.num_nodes)]
    score = sum(float(own[rows.index(leaf)]) for leaf in leaves)
    assert math.isclose(score, best_score, rel_tol=1e-12)


def test_a_stationary_function_keeps_one_leaf_and_a_change_is_kept():
    gen = torch.Generator().manual_seed(1)
    X = torch.rand(80, 2, generator=gen, dtype=torch.float64)
    smooth = torch.sin(3 * X[:, 0]) + X[:, 1]
    assert build_partition(X, smooth).num_leaves > 1
    assert loo_prune(build_partition(X, smooth), X, smooth).num_leaves == 1
    x = X[:, :1]
    rugged = torch.where(x[:, 0] < 0.5, torch.sin(40 * x[:, 0]), x[:, 0])
    pruned = loo_prune(build_partition(x, rugged), x, rugged)
    assert pruned.num_leaves > 1
    leaves = pruned.leaf_members
    mixed = (leaves & (x[:, 0] < 0.45)).any(-1) & (leaves & (x[:, 0] > 0.55)).any(-1)
    assert not bool(mixed.any())  # the rugged and the smooth half are apart


def test_bad_input_is_refused():
    X = torch.rand(20, 2, dtype=torch.float64)
    y = X.sum(-1)
    part = build_partition(X, y)
    with pytest.raises(ValueError, match="hold n values"):
        loo_prune(part, X, y[:5])
    with pytest.raises(ValueError, match="partition is over 20 points"):
        loo_prune(part, X[:10], y[:10])
