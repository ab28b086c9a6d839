r"""Zooming message passing for additive acquisitions (Alg. 2 of Han et al., 2021).

An acquisition that is a sum of one-variable and two-variable terms on a forest
([`TreeAdditiveUCB`][treebo.tree_additive.ucb.TreeAdditiveUCB]) is maximized exactly on
any product grid by
[`message_passing_discrete()`][treebo.tree_additive.message_passing.message_passing_discrete].
Zooming makes this continuous: at each of ``L`` levels, every variable's current
interval is cut into ``R`` equal cells, one uniformly random representative is drawn in
each cell, the grid of representatives is maximized exactly, and every variable's
interval shrinks to the cell of its chosen representative. After ``L`` levels the
resolution is $R^{-L}$ of the box, at a cost of $O(L (d R + E R^2))$ acquisition terms
instead of $R^{dL}$. Restarts run as one batch: the first takes the cell midpoints as
representatives (which zooms exactly onto the peak of a separable unimodal function),
the others uniformly random points in each cell, the randomized strategy of the paper
(which can recover from a midpoint grid's blind spots).
"""

from __future__ import annotations

import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor

from treebo.tree_additive.forest import ForestSchedule
from treebo.tree_additive.message_passing import message_passing_discrete


def optimize_acqf_zooming(
    acq_function: AcquisitionFunction,
    bounds: Tensor,
    grid_size: int = 4,
    num_levels: int = 4,
    num_restarts: int = 4,
    seed: int | None = None,
    return_restarts: bool = False,
) -> tuple[Tensor, Tensor]:
    r"""Maximize an additive acquisition by zooming max-sum message passing.

    Args:
        acq_function: An acquisition with ``grid_values(grid) -> (unary,
            pairwise)`` and ``constant()`` whose model has ``edges`` (e.g.
            [`TreeAdditiveUCB`][treebo.tree_additive.ucb.TreeAdditiveUCB]).
        bounds: ``2 x d`` box.
        grid_size: ``R``, cells per variable and level.
        num_levels: ``L``, zoom levels.
        num_restarts: Zooming runs in the batch: cell midpoints, then
            ``num_restarts - 1`` randomized ones.
        seed: Seed of the representatives.
        return_restarts: Return every restart's best point, not only the best.

    Returns:
        ``(candidate, value)``: the ``1 x d`` best point found (the best chosen
        representative over all levels and restarts) and its acquisition value;
        with ``return_restarts``, ``num_restarts x d`` points and their values,
        best first.

    Example:
        >>> from treebo.tree_additive import TreeAdditiveGP, TreeAdditiveUCB
        >>> X = torch.rand(20, 3, dtype=torch.float64)
        >>> model = TreeAdditiveGP(X, -(X - 0.3).square().sum(-1, keepdim=True))
        >>> acqf = TreeAdditiveUCB(model.eval(), beta=0.0)
        >>> bounds = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.float64)
        >>> x, value = optimize_acqf_zooming(acqf, bounds, seed=0)
        >>> x.shape, bool(torch.isclose(acqf(x.unsqueeze(0)), value))
        (torch.Size([1, 3]), True)
    """
    for name, value, low in (
        ("grid_size", grid_size, 2),
        ("num_levels", num_levels, 1),
        ("num_restarts", num_restarts, 1),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
    if bounds.dim() != 2 or bounds.shape[0] != 2:
        raise ValueError(f"bounds must be 2 x d, got shape {tuple(bounds.shape)}.")
    d = bounds.shape[-1]
    R = grid_size
    schedule = ForestSchedule.from_edges(acq_function.model.edges, d)
    generator = torch.Generator()
    if seed is not None:
        generator.manual_seed(seed)
    low = bounds[0].expand(num_restarts, d).clone()
    width = (bounds[1] - bounds[0]).expand(num_restarts, d) / R
    steps = torch.arange(R).to(bounds)
    best_x = low.clone()
    best_value = torch.full((num_restarts,), -torch.inf).to(bounds)
    with torch.no_grad():
        constant = acq_function.constant()
        for _ in range(num_levels):
            cells = low.unsqueeze(-1) + width.unsqueeze(-1) * steps  # B x d x R
            u = torch.rand(num_restarts, d, R, generator=generator).to(bounds)
            u[0] = 0.5
            grid = cells + width.unsqueeze(-1) * u
            unary, pairwise = acq_function.grid_values(grid)
            index, value = message_passing_discrete(unary, pairwise, schedule)
            x = grid.gather(-1, index.unsqueeze(-1)).squeeze(-1)
            value = value + constant
            better = value > best_value
            best_x = torch.where(better.unsqueeze(-1), x, best_x)
            best_value = torch.where(better, value, best_value)
            low = cells.gather(-1, index.unsqueeze(-1)).squeeze(-1)
            width = width / R
    if return_restarts:
        order = best_value.argsort(descending=True)
        return best_x[order], best_value[order]
    i = int(best_value.argmax())
    return best_x[i : i + 1], best_value[i]
