import itertools

import pytest
import torch

from tests.conftest import random_points, random_tree
from treebo.space import TreeStructure
from treebo.space.structure import as_tree_structure


def active_by_walking(tree: TreeStructure, x: torch.Tensor) -> list[bool]:
    """A vertex is active iff every condition on its path holds (brute force)."""
    return [
        all(float(x[col]) in values for col, values in tree.vertex_conditions(v))
        for v in range(tree.num_vertices)
    ]


def test_jenatton_has_seven_vertices_three_slots_four_paths():
    deps = {0: {0: [1, 2], 1: [3, 4]}, 2: {0: [5], 1: [6]}, 4: {0: [7], 1: [8]}}
    tree = TreeStructure(9, deps)
    assert (tree.num_vertices, tree.num_slots, tree.num_paths, tree.depth) == (
        7,
        3,
        4,
        2,
    )
    assert tree.to_hierarchical_dependencies() == deps


@pytest.mark.parametrize("seed", range(8))
def test_vertex_activity_matches_walking_the_tree(seed):
    d, deps = random_tree(seed, allow_multi_choice=seed % 2 == 1)
    tree = TreeStructure(d, deps)
    X = random_points(d, deps, 40, seed)
    active = tree.vertex_activity(X)
    assert active.shape == (40, tree.num_vertices)
    expected = torch.tensor([active_by_walking(tree, x) for x in X])
    assert torch.equal(active, expected)
    # batch dimensions broadcast
    assert torch.equal(tree.vertex_activity(X.view(4, 10, d)).view(40, -1), active)


@pytest.mark.parametrize("seed", range(8))
def test_vertices_that_can_be_active_together_get_different_slots(seed):
    d, deps = random_tree(seed, allow_multi_choice=seed % 2 == 1)
    tree = TreeStructure(d, deps)
    X = random_points(d, deps, 200, seed + 100)
    active = tree.vertex_activity(X)
    for u, v in itertools.combinations(range(tree.num_vertices), 2):
        if bool((active[:, u] & active[:, v]).any()):
            assert tree.vertex_slots[u] != tree.vertex_slots[v]
            assert tree.co_active[u, v]
    # slot_vertices names the active vertex of each slot, V where none is
    slots = tree.slot_vertices(active)
    for n in range(X.shape[0]):
        for s in range(tree.num_slots):
            members = active[n] & (tree.vertex_slots == s)
            want = int(members.nonzero()[0]) if members.any() else tree.num_vertices
            assert int(slots[n, s]) == want


def test_paths_are_the_sets_of_vertices_that_can_be_active():
    d, deps = random_tree(3)
    tree = TreeStructure(d, deps)
    X = random_points(d, deps, 500, 0)
    seen = {tuple(row.tolist()) for row in tree.vertex_activity(X)}
    listed = {tuple(row.tolist()) for row in tree.path_vertex_mask.bool()}
    assert seen <= listed and len(listed) == tree.num_paths


def test_a_structure_is_shared_not_rebuilt():
    tree = TreeStructure(3, {0: {0: [1], 1: [2]}})
    assert as_tree_structure(3, tree) is tree
    assert as_tree_structure(3, {0: {0: [1], 1: [2]}}) is not tree
    with pytest.raises(ValueError, match="hierarchical_dependencies: the tree has 3"):
        as_tree_structure(4, tree)


@pytest.mark.parametrize(
    "deps, match",
    [
        ({5: {0: [1]}}, "5"),  # a parent outside the columns
        ({0: {0: [1], 1: [0]}}, "cycle"),  # a choice under itself
    ],
)
def test_bad_dependencies_are_refused(deps, match):
    with pytest.raises(ValueError, match=match):
        TreeStructure(3, deps)
