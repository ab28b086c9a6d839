"""The loop's initial design: every path in turn, values from scrambled Sobol."""

from __future__ import annotations

from typing import Any

import torch
from torch.quasirandom import SobolEngine

from treebo.space import TreeSpace


def default_initial_size(space: TreeSpace) -> int:
    """Number of paths + 1, between 5 and 20."""
    return min(20, max(5, space.num_paths + 1))


def initial_design(space: TreeSpace, n: int, seed: int | None) -> list[dict[str, Any]]:
    """``n`` configurations that visit the paths in a shuffled round-robin.

    The continuous values come from one scrambled Sobol sequence over the
    whole encoding, so each path's points are spread out as well.

    Args:
        space: The search space.
        n: Number of configurations.
        seed: Seed of the path order and the scrambling (``None`` means 0).

    Example:
        >>> from treebo.test_functions import Jenatton
        >>> configs = initial_design(Jenatton().space, 8, seed=0)
        >>> sorted({(c["x1"], c.get("x2"), c.get("x3")) for c in configs}, key=str)
        [(0, 0, None), (0, 1, None), (1, None, 0), (1, None, 1)]
    """
    gen = torch.Generator()
    gen.manual_seed(0 if seed is None else seed)
    order = torch.randperm(space.num_paths, generator=gen)
    paths = order.repeat(n // space.num_paths + 1)[:n]
    sobol = SobolEngine(
        space.dim,
        scramble=True,
        seed=int(torch.randint(2**31 - 1, (1,), generator=gen)),
    )
    u = sobol.draw(n, dtype=torch.float64)
    X = space.bounds[0] + u * (space.bounds[1] - space.bounds[0])
    return space.to_dicts(space.set_paths(X, paths))
