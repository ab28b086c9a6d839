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

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from treebo.optim.pool import rows_matching
from treebo.space import TreeSpace

#: Two encodings are the same configuration if they differ by at most this
#: fraction of each column's range (round-off, e.g. a float32 round trip).
SAME_CONFIGURATION_TOL = 1e-6


def encode_candidates(
    space: TreeSpace, candidates: Sequence[Mapping[str, Any]] | Tensor | Any
) -> Tensor:
    """A pool of configurations as ``m x d`` canonical encodings (float64, CPU).

    Rows that repeat an earlier row are dropped with a warning (each configuration is
    evaluated at most once).

    Args:
        space: The search space.
        candidates: Configurations (dicts; a missing value, ``None`` or NaN, marks an
            inactive parameter), a pandas ``DataFrame`` with one column per parameter
            (NaN where inactive), or their encoding (``space.to_tensor(configs)``);
            encoded rows may hold any value in inactive columns.

    Raises:
        ValueError: If the pool is empty or an encoded row is not a configuration of the
            space (wrong width, not finite, out of bounds, a value between a
            categorical's codes or an integer's steps);
            [`ConfigurationError`][treebo.space.parameters.ConfigurationError] naming
            the row and the parameter for an invalid configuration.
        TypeError: If ``candidates`` is not a pool (e.g. a number).

    Example:
        >>> import pandas as pd
        >>> from treebo.test_functions import Jenatton
        >>> space = Jenatton().space
        >>> frame = pd.DataFrame(space.to_dicts(space.sample(4, seed=0)))
        >>> encode_candidates(space, frame).shape  # NaN where a parameter is inactive
        torch.Size([4, 9])
    """
    if isinstance(candidates, Tensor):
        pool = _checked_encoding(space, candidates)
    elif isinstance(candidates, (Mapping, str)) or not isinstance(candidates, Iterable):
        raise TypeError(
            "candidates must be a list of configurations, a DataFrame or their "
            f"encoding, got a {type(candidates).__name__} (to get several "
            "configurations at once, call ask() several times before telling: the "
            "pending ones are avoided)."
        )
    else:
        labels, rows = _records(candidates)
        try:
            pool = space.to_tensor(rows)
        except ValueError:  # name the row: encode them one by one (error path only)
            for label, row in zip(labels, rows, strict=True):
                try:
                    space.to_tensor([row])
                except ValueError as err:
                    raise type(err)(f"candidates row {label!r}: {err}") from None
            raise
    if pool.shape[0] == 0:
        raise ValueError("candidates is empty.")
    return _without_repeats(pool)


def _records(candidates: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    """Row labels and configurations, with missing values (``None``, NaN) left out."""
    if hasattr(candidates, "to_dict") and hasattr(candidates, "columns"):  # pandas
        labels, rows = list(candidates.index), candidates.to_dict("records")
    else:
        rows = list(candidates)
        labels = list(range(len(rows)))
    for label, row in zip(labels, rows, strict=True):
        if not isinstance(row, Mapping):
            raise TypeError(
                f"candidates row {label!r} must be a dict of parameter values, got a "
                f"{type(row).__name__}."
            )
    return labels, [{k: v for k, v in r.items() if not _missing(v)} for r in rows]


def _missing(value: Any) -> bool:
    return (
        value is None
        or (isinstance(value, float) and math.isnan(value))
        or type(value).__name__ == "NAType"
    )  # pandas.NA


def _checked_encoding(space: TreeSpace, candidates: Tensor) -> Tensor:
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
    return canonical


def _without_repeats(pool: Tensor) -> Tensor:
    """``pool`` without the rows that repeat an earlier one (order kept)."""
    unique, inverse = torch.unique(pool, dim=0, return_inverse=True)
    if unique.shape[0] == pool.shape[0]:
        return pool
    index = torch.arange(pool.shape[0])
    first = torch.full((unique.shape[0],), pool.shape[0]).scatter_reduce(
        0, inverse, index, reduce="amin"
    )
    keep = torch.zeros(pool.shape[0], dtype=torch.bool)
    keep[first] = True
    repeat = int((~keep).nonzero()[0])
    warnings.warn(
        f"candidates: {int((~keep).sum())} rows repeat an earlier row (the first: row "
        f"{repeat}, a repeat of row {int(first[inverse[repeat]])}); they are dropped "
        "(each configuration is evaluated at most once).",
        UserWarning,
        stacklevel=3,
    )
    return pool[keep]


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
