"""Pools of configurations: validating them and leaving out what was asked.

[`encode_candidates()`][treebo.loop.candidates.encode_candidates] turns a user's pool (a
list of configurations, or their encoding) into canonical ``m x d`` encodings with a
clear error for anything that is not a configuration of the space;
[`fresh_candidates()`][treebo.loop.candidates.fresh_candidates] keeps the rows that are
neither evaluated nor pending. The loop
([`ask()`][treebo.loop.optimizer.TreeOptimizer.ask]) then scores the fresh rows.

Example:
    >>> from treebo.test_functions import Jenatton
    >>> space = Jenatton().space
    >>> pool = encode_candidates(space, space.to_dicts(space.sample(5, seed=0)))
    >>> fresh_candidates(space, pool, pool[:2]).shape
    torch.Size([3, 9])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from treebo.optim.pool import rows_matching
from treebo.space import TreeSpace

#: Two encodings are the same configuration if they differ by at most this
#: fraction of each column's range (round-off, e.g. a float32 round trip).
SAME_CONFIGURATION_TOL = 1e-6


def encode_candidates(
    space: TreeSpace, candidates: Sequence[Mapping[str, Any]] | Tensor
) -> Tensor:
    """A pool of configurations as ``m x d`` canonical encodings (float64, CPU).

    Args:
        space: The search space.
        candidates: Configurations (dicts), or their encoding
            (``space.to_tensor(configs)``); encoded rows may hold any value
            in inactive columns.

    Raises:
        ValueError: If the pool is empty or an encoded row is not a configuration of the
            space (wrong width, not finite, out of bounds, a value between a
            categorical's codes or an integer's steps);
            [`ConfigurationError`][treebo.space.parameters.ConfigurationError] naming
            the parameter for an invalid dict.
    """
    if isinstance(candidates, Tensor):
        pool = candidates.detach().to("cpu", torch.float64)
        if pool.dim() != 2 or pool.shape[-1] != space.dim:
            raise ValueError(
                f"candidates must be an m x {space.dim} encoding, got shape "
                f"{tuple(pool.shape)}."
            )
        if not bool(pool.isfinite().all()):
            raise ValueError("candidates holds values that are not finite.")
        canonical = space.canonicalize(pool)
        width = (space.bounds[1] - space.bounds[0]).clamp_min(1e-300)
        moved = ((canonical - pool).abs() / width > SAME_CONFIGURATION_TOL) & (
            space.column_activity(pool)
        )
        if bool(moved.any()):
            row, column = (int(i) for i in moved.nonzero()[0])
            raise ValueError(
                f"candidates row {row} is not a configuration of the space: "
                f"{space.parameter_names[column]!r} = {float(pool[row, column])} "
                "is out of bounds or between its allowed values (encode "
                "configurations with space.to_tensor)."
            )
        pool = canonical
    elif isinstance(candidates, (Mapping, str)):
        raise ValueError(
            "candidates must be a list of configurations or their encoding, "
            f"got a {type(candidates).__name__}."
        )
    else:
        pool = space.to_tensor(list(candidates))
    if pool.shape[0] == 0:
        raise ValueError("candidates is empty.")
    return pool


def fresh_candidates(space: TreeSpace, pool: Tensor, seen: Tensor) -> Tensor:
    """The rows of ``pool`` (``m x d``) that repeat no row of ``seen``.

    Raises:
        ValueError: If every row of the pool was seen.
    """
    width = space.bounds[1] - space.bounds[0]
    taken = rows_matching(pool, seen, width, SAME_CONFIGURATION_TOL)
    if bool(taken.all()):
        raise ValueError(
            f"every one of the {pool.shape[0]} configurations in candidates "
            "has been evaluated or is pending."
        )
    return pool[~taken]
