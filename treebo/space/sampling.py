"""Random and quasi-random configurations of a
[`TreeSpace`][treebo.space.tree_space.TreeSpace]."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

if TYPE_CHECKING:
    from treebo.space.tree_space import TreeSpace


def sample_space(
    space: TreeSpace,
    n: int,
    seed: int | None = None,
    by: str = "choice",
    generator: torch.Generator | None = None,
    canonical: bool = True,
) -> Tensor:
    """Sample ``n`` valid encoded configurations (``n x d``).

    Args:
        space: The space.
        n: Number of samples.
        seed: Seed of a fresh generator (ignored if ``generator`` is given).
        by: ``"choice"``: every choice and categorical uniform over its labels (a path's
            probability is the product along it); ``"path"``: every path equally likely
            (spaces with at most `MAX_ENUMERATED_PATHS` paths). Real and integer values
            are uniform in the tensor representation (log-uniform for ``log_scale``).
        generator: Optional ``torch.Generator``.
        canonical: Reset inactive columns to their canonical value. With
            ``False`` every real column holds a random value (useful
            for scoring every vertex at once, or for switching paths).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}.")
    if by not in ("choice", "path"):
        raise ValueError(f"by must be 'choice' or 'path', got {by!r}.")
    if generator is None:
        generator = torch.Generator()
        if seed is not None:
            generator.manual_seed(seed)
    u = torch.rand(n, space.dim, generator=generator, dtype=torch.float64)
    X = space.bounds[0] + u * (space.bounds[1] - space.bounds[0])
    labels = list(space.choice_codes)
    if by == "path":
        idx = torch.randint(space.num_paths, (n,), generator=generator)
        values = space.tree.path_choice_values
        X = torch.where(torch.isnan(values[idx]), X, values[idx])
        labels = [k for k in labels if space.columns[k].role != "choice"]
    for name in labels:
        vals = torch.tensor(list(space.choice_codes[name].values()))
        pick = torch.randint(len(vals), (n,), generator=generator)
        X[:, space.columns[name].column] = vals[pick]
    if space.integer_column_index.numel():  # integers: uniform over their values
        X = _spread_integers(space, X)
    if not canonical:
        return X
    return space.canonicalize(X)


def from_unit_cube(space: TreeSpace, U: Tensor, canonical: bool = True) -> Tensor:
    """Map points of ``[0, 1]^d`` (e.g. Sobol points) to valid encodings.

    Real columns are scaled to their bounds (in the tensor representation),
    integers spread evenly over their values, and choices and categoricals
    take label ``floor(u K)`` of their ``K``.

    Args:
        space: The space.
        U: ``n x d`` points in the unit cube.
        canonical: Reset inactive columns to their canonical value (with
            ``False`` they keep their values, e.g. for a later change of path).

    Returns:
        ``n x d`` encodings.
    """
    X = space.bounds[0] + U * (space.bounds[1] - space.bounds[0])
    if space.label_column_index.numel():
        table = space.label_code_table
        sizes = torch.isfinite(table).sum(-1)
        pick = (U[:, space.label_column_index] * sizes).long()
        pick = torch.minimum(pick, sizes - 1).clamp_min(0)
        X[:, space.label_column_index] = torch.gather(
            table.expand(U.shape[0], -1, -1), 2, pick.unsqueeze(-1)
        ).squeeze(-1)
    if space.integer_column_index.numel():
        X = _spread_integers(space, X)
    return space.canonicalize(X) if canonical else X


def _spread_integers(space: TreeSpace, X: Tensor) -> Tensor:
    """Widen uniform integer columns by half a step on each side, so that
    rounding gives the end values their full share."""
    cols = space.integer_column_index
    lo, up = space.bounds[0, cols], space.bounds[1, cols]
    linear = ~space.integer_log_scale
    z = X[:, cols]
    lo_h = torch.where(linear, lo - 0.5, lo)
    up_h = torch.where(linear, up + 0.5, up)
    X = X.clone()
    X[:, cols] = (lo_h + (z - lo) / (up - lo) * (up_h - lo_h)).clamp(lo, up)
    return X
