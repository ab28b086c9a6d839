import itertools

import pytest
import torch

from treebo.tree_additive import message_passing_discrete
from treebo.tree_additive.forest import ForestSchedule


def _random_forest(d, generator):
    order = torch.randperm(d, generator=generator).tolist()
    edges = []
    for k in range(1, d):
        if torch.rand(1, generator=generator, dtype=torch.float64) < 0.75:
            parent = order[int(torch.randint(k, (1,), generator=generator))]
            pair = [order[k], parent]
            if torch.rand(1, generator=generator, dtype=torch.float64) < 0.5:
                pair.reverse()
            edges.append(pair)
    return torch.tensor(edges, dtype=torch.long).reshape(-1, 2)


def _value(unary, pairwise, edges, x):
    total = sum(unary[i, x[i]] for i in range(len(x)))
    pairs = enumerate(edges.tolist())
    return total + sum(pairwise[e, x[u], x[v]] for e, (u, v) in pairs)


@pytest.mark.parametrize("seed", range(12))
def test_the_maximum_equals_brute_force_on_random_forests(seed):
    g = torch.Generator().manual_seed(seed)
    d, R = int(torch.randint(2, 7, (1,), generator=g)), 3
    edges = _random_forest(d, g)
    unary = torch.randn(2, d, R, generator=g, dtype=torch.float64)
    pairwise = torch.randn(2, edges.shape[0], R, R, generator=g, dtype=torch.float64)
    index, value = message_passing_discrete(unary, pairwise, edges)
    for b in range(2):
        best = max(
            float(_value(unary[b], pairwise[b], edges, x))
            for x in itertools.product(range(R), repeat=d)
        )
        assert float(value[b]) == pytest.approx(best, abs=1e-12)
        reached = _value(unary[b], pairwise[b], edges, index[b].tolist())
        assert float(reached) == pytest.approx(best, abs=1e-12)


def test_a_prebuilt_schedule_gives_the_same_answer_for_sorted_edges():
    g = torch.Generator().manual_seed(0)
    edges = torch.tensor([[0, 1], [1, 2], [1, 3]])
    unary = torch.randn(4, 5, generator=g, dtype=torch.float64)
    pairwise = torch.randn(3, 5, 5, generator=g, dtype=torch.float64)
    schedule = ForestSchedule.from_edges(edges, 4)
    a = message_passing_discrete(unary, pairwise, edges)
    b = message_passing_discrete(unary, pairwise, schedule)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_shapes_are_checked():
    with pytest.raises(ValueError, match="pairwise"):
        message_passing_discrete(
            torch.zeros(3, 4), torch.zeros(1, 4, 3), torch.tensor([[0, 1]])
        )
