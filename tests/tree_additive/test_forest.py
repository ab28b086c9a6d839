import pytest
import torch

from treebo.tree_additive.forest import ForestSchedule, check_forest, component_labels


def test_check_forest_sorts_each_row_and_keeps_the_row_order():
    edges = check_forest(torch.tensor([[3, 1], [0, 1]]), 4)
    assert edges.tolist() == [[1, 3], [0, 1]]
    assert check_forest(None, 3).shape == (0, 2)


@pytest.mark.parametrize(
    "edges, message",
    [
        ([[0, 1], [1, 2], [2, 0]], "cycle"),
        ([[0, 0]], "self-loop"),
        ([[0, 3]], r"\[0, 3\)"),
        ([[0, 1], [1, 0]], "twice"),
        ([[0, 1, 2]], "E x 2"),
        ([[0.0, 1.0]], "integer"),
    ],
)
def test_bad_forests_are_refused(edges, message):
    with pytest.raises(ValueError, match=message):
        check_forest(torch.tensor(edges), 3)


def test_components_and_schedule_of_a_forest():
    edges = torch.tensor([[4, 2], [2, 0], [1, 3]])
    assert component_labels(edges, 6).tolist() == [0, 1, 0, 1, 0, 2]
    schedule = ForestSchedule.from_edges(edges, 6)
    assert schedule.roots.tolist() == [0, 1, 5]
    # depth 1: 2 (under 0), 3 (under 1); depth 2: 4 (under 2)
    first, second = schedule.levels
    pairs = zip(first.child.tolist(), first.parent.tolist(), strict=True)
    assert sorted(pairs) == [(2, 0), (3, 1)]
    pairs = zip(second.child.tolist(), second.parent.tolist(), strict=True)
    assert list(pairs) == [(4, 2)]
    # edge [4, 2] is stored as (2, 4): child 4 is its second column
    assert second.child_first.tolist() == [False]
