"""Counting, bounding and listing the configurations (paths) of a tree."""

from __future__ import annotations

import random

import pytest
import torch

from tests.conftest import random_points, random_tree
from treebo.space.configurations import MAX_ENUMERATED_PATHS, PathTable
from treebo.space.structure import TreeStructure


def with_shared_columns(deps: dict, seed: int) -> dict:
    """``deps`` with some columns also listed under a sibling value."""
    rng = random.Random(seed)
    out = {p: {v: list(cs) for v, cs in b.items()} for p, b in deps.items()}
    for branches in out.values():
        values = list(branches)
        if len(values) > 1 and branches[values[0]] and rng.random() < 0.7:
            col = branches[values[0]][0]
            for v in values[1:]:
                if rng.random() < 0.6:
                    branches[v].append(col)
    return out


def brute_force_activity(deps: dict, d: int, x: torch.Tensor) -> list[bool]:
    """Column activity by walking the conditions up to the root."""
    parent = {c: (p, v) for p, b in deps.items() for v, cs in b.items() for c in cs}
    admitted = {
        c: {float(v) for v, cs in deps[parent[c][0]].items() if c in cs} for c in parent
    }

    def active(c: int) -> bool:
        if c not in parent:
            return True
        p = parent[c][0]
        return float(x[p]) in admitted[c] and active(p)

    return [active(c) for c in range(d)]


@pytest.mark.parametrize("seed", range(8))
def test_counts_and_bounds_match_the_enumeration(seed):
    d, deps = random_tree(seed, allow_multi_choice=True)
    deps = with_shared_columns(deps, seed)
    tree = TreeStructure(d, deps)
    table = PathTable(tree)
    assert tree.num_paths == table.vertex_mask.shape[0]
    # Distinct configurations, each a set of co-active vertices.
    assert torch.unique(table.vertex_mask, dim=0).shape[0] == tree.num_paths
    weight = torch.rand(tree.num_vertices, dtype=torch.float64) < 0.6
    expected = int((table.vertex_mask & weight).sum(-1).max())
    assert tree.max_active_vertices(weight) == expected
    # Each configuration's choice values activate exactly its vertices.
    X = torch.where(table.choice_values.isnan(), 0.0, table.choice_values)
    torch.testing.assert_close(tree.vertex_activity(X), table.vertex_mask)


@pytest.mark.parametrize("seed", range(8))
def test_shared_columns_are_active_under_each_of_their_values(seed):
    d, deps = random_tree(seed, allow_multi_choice=True)
    deps = with_shared_columns(deps, seed + 100)
    tree = TreeStructure(d, deps)
    X = random_points(d, deps, 30, seed)
    vertex_of = torch.zeros(d, dtype=torch.long)
    for v in tree.vertices:
        vertex_of[list(v.continuous_columns + v.choice_columns)] = v.index
    active = tree.vertex_activity(X)[:, vertex_of]
    expected = torch.tensor([brute_force_activity(deps, d, x) for x in X])
    assert torch.equal(active, expected)
    # Vertices active together never share a slot.
    va = tree.vertex_activity(X)
    for row in va:
        slots = tree.vertex_slots[row]
        assert slots.unique().numel() == slots.numel()


def test_many_flags_are_counted_not_listed():
    deps = {i: {0: [], 1: [20 + i]} for i in range(20)}
    tree = TreeStructure(40, deps)
    assert tree.num_paths == 2**20
    assert tree.max_active_vertices() == 1 + 20
    with pytest.raises(ValueError, match=f"limited to {MAX_ENUMERATED_PATHS}"):
        _ = tree.path_vertex_mask


@pytest.mark.parametrize("seed", range(10))
def test_dynamic_programming_finds_the_best_configuration_and_runners_up(seed):
    d, deps = random_tree(seed, allow_multi_choice=True)
    deps = with_shared_columns(deps, seed)
    tree = TreeStructure(d, deps)
    if tree.num_paths > MAX_ENUMERATED_PATHS:
        pytest.skip("too many paths to check by listing")
    scores = torch.randn(tree.num_vertices, dtype=torch.float64)
    best = tree.configuration_search(scores)
    table = PathTable(tree)
    totals = table.vertex_mask.double() @ scores
    torch.testing.assert_close(best.value, totals.max())
    x = torch.zeros(d, dtype=torch.float64)
    x[best.columns] = best.choice_values
    active = tree.vertex_activity(x.unsqueeze(0))[0]
    torch.testing.assert_close((active.double() * scores).sum(), totals.max())
    # Forcing an active choice to a value costs exactly group_gain.
    owner = tree.configuration_search.choice_vertex[
        tree.configuration_search.group_choice
    ]
    for g in torch.nonzero(active[owner]).flatten().tolist():
        col, value = best.group_columns[g], best.group_values[g]
        forced = totals[table.choice_values[:, col] == value].max()
        torch.testing.assert_close(best.value + best.group_gain[g], forced)
