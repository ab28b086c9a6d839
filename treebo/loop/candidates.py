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

    Rows that repeat an earlier row, also to within round-off
    (``SAME_CONFIGURATION_TOL``, 1e-6 of each
    column's range, the tolerance by which the loop matches evaluated rows), are
    dropped with a warning that names them (each configuration is evaluated at most
    once).

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
            f"encoding, got a {type(candidates).__name__} (for several "
            "configurations at once: ask(n))."
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
    return _without_repeats(pool, space.bounds[1] - space.bounds[0])


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


def _without_repeats(pool: Tensor, width: Tensor) -> Tensor:
    """``pool`` without the rows within ``SAME_CONFIGURATION_TOL`` of an earlier row
    (order kept)."""
    repeats = repeated_rows(pool, width, SAME_CONFIGURATION_TOL)
    if not bool((repeats >= 0).any()):
        return pool
    dropped = (repeats >= 0).nonzero().squeeze(-1)
    named = ", ".join(
        f"row {int(i)} (= row {int(repeats[i])})" for i in dropped[:5].tolist()
    )
    more = f" and {dropped.numel() - 5} more" if dropped.numel() > 5 else ""
    warnings.warn(
        f"candidates: {dropped.numel()} rows repeat an earlier row to within "
        f"{SAME_CONFIGURATION_TOL:g} of each range: {named}{more}; they are dropped "
        "(each configuration is evaluated at most once).",
        UserWarning,
        stacklevel=3,
    )
    return pool[repeats < 0]


def repeated_rows(pool: Tensor, width: Tensor, tol: float) -> Tensor:
    r"""For each row of ``pool``, the earlier row it is merged into, or -1: the first
    earlier row it repeats to within ``tol`` of each column's ``width``
    ($\max_k |x_{ik} - x_{jk}| / w_k \le$ ``tol``), followed through chains (where
    c repeats b and b repeats a, both are merged into a).

    The rows are sorted by a random positive projection $p = \sum_k a_k x_k / w_k$
    ($a_k \in [1, 2]$, fixed): two rows that repeat each other are at most
    $t \sum_k a_k$ apart in $p$, so only neighbours within that window in the sorted
    order are compared, a window that holds a handful of rows for any pool that is
    not made of near-repeats. Cost $O(m \log m + m d w)$ for ``m`` rows and window
    size $w$, against $O(m^2 d)$ for all pairs.

    Args:
        pool: ``m x d`` configurations.
        width: ``d`` column widths.
        tol: Largest gap, as a fraction of each width, that counts as equal.

    Returns:
        ``m`` row indices (``long``), -1 where a row repeats no earlier one.

    Example:
        >>> import torch
        >>> pool = torch.tensor([[0.0, 1.0], [0.5, 0.5], [1e-9, 1.0]])
        >>> repeated_rows(pool, torch.ones(2), 1e-6).tolist()
        [-1, -1, 0]
    """
    m = pool.shape[0]
    arange = torch.arange(m, device=pool.device)
    # Exact repeats first (a pool may hold many copies of a row).
    _, inverse = torch.unique(pool, dim=0, return_inverse=True)
    exact = torch.full((m,), m, device=pool.device).scatter_reduce(
        0, inverse, arange, reduce="amin"
    )[inverse]
    distinct = (exact == arange).nonzero().squeeze(-1)
    z = pool[distinct] / width.to(pool).clamp_min(torch.finfo(pool.dtype).tiny)
    weights = torch.rand(pool.shape[-1], generator=torch.Generator().manual_seed(0))
    weights = (1.0 + weights).to(pool)
    projection = z @ weights
    order = projection.argsort()
    z, projection = z[order], projection[order]
    window = tol * float(weights.sum()) * (1 + 1e-9)
    n = distinct.numel()
    first = torch.arange(n, device=pool.device)
    offset = 1
    # One pass per offset in the sorted order, while some pair is that close in p.
    while offset < n and bool(
        (projection[offset:] - projection[:-offset]).min() <= window
    ):
        same = (z[offset:] - z[:-offset]).abs().amax(-1) <= tol
        a, b = order[:-offset][same], order[offset:][same]
        # The earlier of the two (in the pool's order) is the one kept.
        first.scatter_reduce_(0, torch.maximum(a, b), torch.minimum(a, b), "amin")
        offset += 1
    while True:  # follow chains (c repeats b repeats a) to the first row
        earlier = first[first]
        if torch.equal(earlier, first):
            break
        first = earlier
    near = distinct[first]  # each distinct row's first near-repeat, as a pool row
    kept = torch.full((m,), -1, dtype=torch.long, device=pool.device)
    kept[distinct] = near
    first_row = kept[exact]
    return torch.where(first_row == arange, -1, first_row)


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
