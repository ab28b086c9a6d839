import itertools

import pytest
import torch

from treebo.test_functions import AdditiveGPFunction, additive_graph
from treebo.tree_additive.forest import ForestSchedule


@pytest.mark.parametrize(
    "name, size", [("grid", (2, 2)), ("star", 4), ("partition", 3)]
)
def test_the_optimum_equals_brute_force_over_the_grid(name, size):
    d, edges = additive_graph(name, size)
    f = AdditiveGPFunction(d, edges, grid_points=6, seed=1)
    grid = torch.tensor(list(itertools.product(range(6), repeat=d))).double() / 5
    values = f(grid)
    assert f.optimal_value == pytest.approx(float(values.min()), abs=1e-12)
    assert float(f(f.optimizers)) == pytest.approx(f.optimal_value, abs=1e-12)


def test_values_are_sums_of_the_drawn_tables_at_the_snapped_point():
    d, edges = additive_graph("star", 3)  # edges (0, 1), (0, 2); none isolated
    f = AdditiveGPFunction(d + 1, edges, grid_points=11, seed=0)  # 3 is isolated
    x = torch.tensor([[0.31, 0.0, 0.96, 0.5]], dtype=torch.float64)
    i = [3, 0, 10, 5]
    expected = f.pairwise[0, i[0], i[1]] + f.pairwise[1, i[0], i[2]]
    expected = expected + f.unary[0, i[3]]
    assert float(f(x)) == pytest.approx(float(expected))


def test_paper_graphs_have_their_shapes():
    assert additive_graph("grid", (3, 3))[1].shape == (12, 2)
    assert additive_graph("partition", 12)[1].shape == (12, 2)
    d, edges = additive_graph("ancestry")
    schedule = ForestSchedule.from_edges(edges, d)  # a tree: no error
    assert d == 132 and schedule.roots.tolist() == [0]
    assert [lv.child.numel() for lv in schedule.levels] == [15, 43, 73]
    with pytest.raises(ValueError, match="name"):
        additive_graph("ring")
