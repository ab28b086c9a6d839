r"""Acquisition maximization over a finite pool of configurations.

Some problems come with the only configurations that can be evaluated: a
tabular benchmark, a pre-computed design, the settings a lab can run. The
next point is then the pool row of highest acquisition value,

$$
x^\star = \operatorname*{arg\,max}_{x \in P} \alpha(x),
$$

scored in chunks of ``chunk_size`` rows so that memory stays bounded whatever the pool's
size (the cost is $O(|P|)$ acquisition evaluations, one batch per chunk).
[`rows_matching()`][treebo.optim.pool.rows_matching] finds the pool rows that repeat
evaluated configurations, so that they can be left out.

Example:
    >>> import torch
    >>> from botorch.acquisition import UpperConfidenceBound
    >>> from botorch.models import SingleTaskGP
    >>> X = torch.rand(8, 2, dtype=torch.float64)
    >>> model = SingleTaskGP(X, (X - 0.5).pow(2).sum(-1, keepdim=True))
    >>> pool = torch.rand(10_000, 2, dtype=torch.float64)
    >>> index, value = optimize_acqf_pool(
    ...     UpperConfidenceBound(model, beta=0.1), pool, chunk_size=4096)
    >>> index.shape, value.shape
    (torch.Size([]), torch.Size([]))
"""

from __future__ import annotations

import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor

#: Pool rows scored per acquisition call.
POOL_CHUNK = 4096


def optimize_acqf_pool(
    acqf: AcquisitionFunction, pool: Tensor, chunk_size: int = POOL_CHUNK
) -> tuple[Tensor, Tensor]:
    """The pool row that maximizes ``acqf`` (the first of equal values).

    Args:
        acqf: An acquisition function of ``batch x 1 x d`` points.
        pool: ``m x d`` candidate points (``m >= 1``) on the acquisition's
            device and dtype.
        chunk_size: Rows scored per call of ``acqf``.

    Returns:
        The row's index (a 0-dim long tensor) and its acquisition value.

    Raises:
        ValueError: If ``pool`` is empty or not ``m x d``.
    """
    if pool.dim() != 2 or pool.shape[0] == 0:
        raise ValueError(
            f"pool must be an m x d tensor with m >= 1, got shape {tuple(pool.shape)}."
        )
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}.")
    best_value = pool.new_full((), -torch.inf)
    best_index = torch.zeros((), dtype=torch.long, device=pool.device)
    with torch.no_grad():
        for start in range(0, pool.shape[0], chunk_size):
            values = acqf(pool[start : start + chunk_size].unsqueeze(-2))
            # A NaN score (a numerical failure at one row) loses to any number.
            value, index = values.nan_to_num(nan=-torch.inf).max(0)
            # Strictly better only: the first of equal values wins.
            better = value > best_value
            best_value = torch.where(better, value, best_value)
            best_index = torch.where(better, index + start, best_index)
    return best_index, best_value


def rows_matching(
    pool: Tensor,
    X: Tensor,
    width: Tensor,
    tol: float,
    chunk_size: int = POOL_CHUNK,
) -> Tensor:
    """Which pool rows repeat a row of ``X`` to ``tol`` of each column's width.

    Args:
        pool: ``m x d`` configurations.
        X: ``n x d`` configurations (e.g. the evaluated ones).
        width: ``d`` column widths (upper minus lower bound).
        tol: Largest gap, as a fraction of the width, that counts as equal.
        chunk_size: Pool rows compared at a time (memory ``chunk_size x n``).

    Returns:
        ``m`` booleans.
    """
    matched = torch.zeros(pool.shape[0], dtype=torch.bool, device=pool.device)
    if X.shape[0] == 0:
        return matched
    scale = width.to(pool).clamp_min(torch.finfo(pool.dtype).tiny)
    X = X.to(pool) / scale
    for start in range(0, pool.shape[0], chunk_size):
        chunk = pool[start : start + chunk_size] / scale
        gap = torch.cdist(chunk, X, p=float("inf"))  # largest column gap
        matched[start : start + chunk.shape[0]] = (gap <= tol).any(-1)
    return matched
