"""The loop's initial design: scrambled Sobol points, every path in turn where
there are fewer paths than points."""

from __future__ import annotations

from typing import Any

import torch
from torch.quasirandom import SobolEngine

from treebo.space import TreeSpace
from treebo.strategies.validation import check_count


def default_initial_size(space: TreeSpace) -> int:
    """Number of paths + 1, between 5 and 20."""
    return min(20, max(5, space.num_paths + 1))


def initial_size(space: TreeSpace, n_initial: int | None) -> int:
    """``n_initial`` checked, or the default size of ``space``'s initial design.

    Raises:
        ConfigurationError: If ``n_initial`` is not an integer of at least 1.
    """
    if n_initial is None:
        return default_initial_size(space)
    return check_count(n_initial, "n_initial", 1)


def initial_design(space: TreeSpace, n: int, seed: int | None) -> list[dict[str, Any]]:
    """``n`` scrambled Sobol configurations.

    Values (and labels, and integers) come from one scrambled Sobol sequence over the
    whole encoding
    ([`from_unit_cube()`][treebo.space.tree_space.TreeSpace.from_unit_cube]). Where the
    space has at most ``n`` paths, they are then visited in a shuffled round-robin, so
    that every path is tried and each path's points are spread out as well.

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
    by_path = space.num_paths <= n
    if by_path:
        order = torch.randperm(space.num_paths, generator=gen)
        paths = order.repeat(n // space.num_paths + 1)[:n]
    sobol = SobolEngine(
        space.dim,
        scramble=True,
        seed=int(torch.randint(2**31 - 1, (1,), generator=gen)),
    )
    X = space.from_unit_cube(sobol.draw(n, dtype=torch.float64), canonical=False)
    if by_path:
        X = space.set_paths(X, paths)
    return space.to_dicts(X)
