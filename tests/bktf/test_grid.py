"""The grid: values per parameter kind, indices, snapping, refusals."""

from __future__ import annotations

import math

import pytest
import torch

from treebo.bktf.grid import Grid
from treebo.space import (
    Categorical,
    Choice,
    ConfigurationError,
    Integer,
    Real,
    TreeSpace,
    Vertex,
)


def mixed_space() -> TreeSpace:
    return TreeSpace(
        Vertex(
            [
                Real("lr", 1e-4, 1e-1, log_scale=True),
                Integer("layers", 1, 4),
                Integer("width", 1, 1000, log_scale=True),
                Categorical("act", ["relu", "tanh", "gelu"]),
                Categorical("size", ["s", "m", "l"], ordered=True),
            ]
        )
    )


def test_values_per_parameter_kind():
    space = mixed_space()
    grid = Grid.from_space(space, resolution=5)
    by_name = dict(zip(space.parameter_names, grid.values, strict=True))
    torch.testing.assert_close(
        by_name["lr"], torch.linspace(-4, -1, 5, dtype=torch.float64)
    )
    assert by_name["layers"].tolist() == [1.0, 2.0, 3.0, 4.0]
    widths = (10 ** by_name["width"]).round().tolist()
    assert widths == [1, 6, 32, 178, 1000]  # evenly spaced on the log scale
    act = space.parameter_names.index("act")
    assert grid.categorical[act] and sum(grid.categorical) == 1
    assert by_name["size"].tolist() == [0.0, 1.0, 2.0]
    # Every grid point decodes to a valid configuration.
    flat = torch.randint(grid.numel, (50,), generator=torch.Generator().manual_seed(0))
    points = grid.points(grid.unflatten(flat))
    for config in space.to_dicts(points):
        space.validate(config)
    assert grid.numel == math.prod(grid.sizes) == 5 * 4 * 5 * 3 * 3


def test_flat_indices_round_trip_and_are_row_major():
    grid = Grid([torch.arange(3.0), torch.arange(4.0), torch.arange(2.0)])
    flat = torch.arange(grid.numel)
    index = grid.unflatten(flat)
    assert torch.equal(grid.flat(index), flat)
    dense = torch.stack(
        torch.meshgrid(*[torch.arange(s) for s in grid.sizes], indexing="ij"), -1
    ).reshape(-1, 3)
    assert torch.equal(index, dense)


def test_indices_refuse_points_off_the_grid_and_snap_moves_them():
    grid = Grid([torch.linspace(0, 1, 5).double(), torch.linspace(0, 10, 3).double()])
    X = torch.tensor([[0.5, 5.0], [0.26, 10.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match="mode 0 holds 0.26, nearest grid value 0.25"):
        grid.indices(X)
    assert grid.indices(grid.snap(X)).tolist() == [[2, 1], [1, 2]]
    with pytest.raises(ValueError, match="2 columns"):
        grid.indices(torch.zeros(1, 3))


def test_refusals_name_the_problem():
    space = TreeSpace(
        Vertex(choices=[Choice("model", {"a": Vertex([Real("x", 0, 1)])})])
    )
    with pytest.raises(ConfigurationError, match="'model' is a choice"):
        Grid.from_space(space)
    with pytest.raises(ValueError, match="resolution"):
        Grid.from_space(mixed_space(), resolution=1)
    with pytest.raises(ValueError, match="repeats"):
        Grid([torch.tensor([0.0, 0.0])])
    with pytest.raises(ValueError, match="categorical has 1"):
        Grid([torch.arange(2.0), torch.arange(2.0)], categorical=[True])
