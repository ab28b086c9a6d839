r"""Tree-aware acquisition optimizers.

Two ways to pick the next point on a :class:`~treebo.space.TreeSpace`:

- :func:`optimize_add_tree_ucb` (Algorithm 2 of Ma & Blaschko, 2020): maximize
  every vertex's UCB on its own low-dimensional domain, all vertices and all
  restarts in one batched L-BFGS-B run, then sum the per-vertex optima along
  each path (``P x V`` mask times ``V`` vector) and return the best path's point.
- :func:`optimize_acqf_tree`: any BoTorch acquisition function (e.g.
  ``LogExpectedImprovement``) over all paths at once: the restarts of every path
  are stacked in one batch in which each row frees only its path's active
  continuous columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor

from treebo.acquisition.add_tree_ucb import AddTreeUCB
from treebo.optim.lbfgsb import maximize_batched
from treebo.space import TreeSpace


@dataclass
class TreeCandidate:
    """Result of a tree-aware acquisition optimization.

    Attributes:
        candidate: ``1 x d`` encoded point.
        value: Acquisition value at the candidate (scalar tensor).
        path: Index of the chosen path in ``space.paths()``.
        path_values: ``P`` tensor: the best acquisition value found per path.
    """

    candidate: Tensor
    value: Tensor
    path: int
    path_values: Tensor


def _check_inputs(space: TreeSpace, num_restarts: int, raw_samples: int) -> None:
    if not isinstance(space, TreeSpace):
        raise TypeError(f"space must be a TreeSpace, got {type(space).__name__}.")
    if num_restarts < 1 or raw_samples < num_restarts:
        raise ValueError(
            f"need 1 <= num_restarts <= raw_samples, got num_restarts={num_restarts}, "
            f"raw_samples={raw_samples}."
        )


def _reference_tensor(acq_function: AcquisitionFunction) -> Tensor:
    model = getattr(acq_function, "model", None)
    if model is not None:
        return model.train_inputs[0]
    return torch.zeros(1, dtype=torch.float64)


def optimize_add_tree_ucb(
    acq_function: AddTreeUCB,
    space: TreeSpace,
    num_restarts: int = 10,
    raw_samples: int = 512,
    seed: int | None = None,
    maxiter: int = 200,
) -> TreeCandidate:
    r"""Add-Tree-GP-UCB: per-vertex maximization, then the best path.

    1. Draw ``raw_samples`` points; each row gives a candidate for every vertex
       (vertex ``v`` reads only its own columns), so one evaluation scores all
       vertices: ``raw_samples x V``.
    2. For every vertex, start ``num_restarts`` runs from its best raw rows;
       since columns belong to exactly one vertex, the starts of all vertices
       fit in one ``num_restarts x d`` tensor, optimized in one L-BFGS-B run of
       the separable sum.
    3. Take each vertex's best value :math:`u_v^*`, score every path by
       :math:`\sum_{v \in l} u_v^*`, and assemble the best path's point.

    Args:
        acq_function: An :class:`AddTreeUCB`.
        space: The search space whose encoding the model was trained on.
        num_restarts: Starts per vertex.
        raw_samples: Random points scored to pick the starts.
        seed: Seed for the raw samples.
        maxiter: L-BFGS-B iteration limit.

    Returns:
        A :class:`TreeCandidate`.
    """
    if not isinstance(acq_function, AddTreeUCB):
        raise TypeError("optimize_add_tree_ucb needs an AddTreeUCB acquisition.")
    _check_inputs(space, num_restarts, raw_samples)
    ref = _reference_tensor(acq_function)
    tree = space.tree
    bounds = space.bounds.to(ref)
    col_vertex = space._column_vertex.to(ref.device)
    raw = space.sample(raw_samples, seed=seed, by="choice").to(ref)
    with torch.no_grad():
        raw_values = acq_function.vertex_values(raw)  # raw x V
    top = raw_values.topk(num_restarts, dim=0).indices  # R x V
    x0 = torch.gather(raw, 0, top[:, col_vertex])  # R x d, per-vertex starts
    free = torch.zeros(space.dim, dtype=torch.bool, device=ref.device)
    free[space.continuous_columns] = True
    x_opt, values = maximize_batched(
        acq_function.vertex_values, x0, bounds[0], bounds[1], free=free,
        maxiter=maxiter,
    )
    with torch.no_grad():
        start_values = acq_function.vertex_values(x0)
    cands = torch.cat([x_opt, x0])
    vals = torch.cat([values, start_values])  # 2R x V
    best_values, best_rows = vals.max(dim=0)  # V
    x_best = torch.gather(cands, 0, best_rows[col_vertex].unsqueeze(0))  # 1 x d
    contributes = acq_function.model.covar_module.vertex_contributes.to(best_values)
    path_mask = tree.path_vertex_mask.to(best_values)
    path_values = path_mask @ (best_values * contributes)
    path = int(path_values.argmax())
    candidate = space.set_paths(x_best, torch.tensor([path], device=ref.device))
    offset = acq_function.offset().reshape(())
    return TreeCandidate(
        candidate=candidate.detach(),
        value=(path_values[path] + offset).detach(),
        path=path,
        path_values=(path_values + offset).detach(),
    )


def optimize_acqf_tree(
    acq_function: AcquisitionFunction,
    space: TreeSpace,
    num_restarts: int = 4,
    raw_samples: int = 128,
    seed: int | None = None,
    maxiter: int = 200,
) -> TreeCandidate:
    r"""Maximize any ``b x 1 x d -> b`` acquisition over every path in one batch.

    For each of the ``P`` paths, ``raw_samples`` random points with that path's
    choices are scored (one call on ``P * raw_samples`` points); the best
    ``num_restarts`` of each path are then optimized together, each row with
    only its path's active continuous columns free.

    Args:
        acq_function: Any single-point BoTorch acquisition function.
        space: The search space (defines the paths, bounds and encoding).
        num_restarts: Starts per path.
        raw_samples: Random points per path.
        seed: Seed for the raw samples.
        maxiter: L-BFGS-B iteration limit.

    Returns:
        A :class:`TreeCandidate`.
    """
    _check_inputs(space, num_restarts, raw_samples)
    ref = _reference_tensor(acq_function)
    P = space.num_paths
    gen = torch.Generator()
    if seed is not None:
        gen.manual_seed(seed)
    raw = space.sample(P * raw_samples, generator=gen).to(ref)
    path_idx = torch.arange(P, device=ref.device).repeat_interleave(raw_samples)
    raw = space.set_paths(raw, path_idx)
    with torch.no_grad():
        raw_values = acq_function(raw.unsqueeze(-2)).reshape(P, raw_samples)
    top = raw_values.topk(num_restarts, dim=1).indices  # P x R
    rows = (top + torch.arange(P, device=ref.device).unsqueeze(-1) * raw_samples)
    x0 = raw[rows.flatten()].unsqueeze(-2)  # (P R) x 1 x d
    active = space.tree.path_active_columns.to(ref.device)
    continuous = torch.zeros(space.dim, dtype=torch.bool, device=ref.device)
    continuous[space.continuous_columns] = True
    free = (active & continuous).repeat_interleave(num_restarts, 0).unsqueeze(-2)
    bounds = space.bounds.to(ref)
    x_opt, values = maximize_batched(
        acq_function, x0, bounds[0], bounds[1], free=free, maxiter=maxiter
    )
    with torch.no_grad():
        start = acq_function(x0)
    keep = values >= start
    x_opt = torch.where(keep.view(-1, 1, 1), x_opt, x0)
    values = torch.where(keep, values, start)
    per_path = values.reshape(P, num_restarts)
    path_values, _ = per_path.max(dim=1)
    best = int(values.argmax())
    candidate = space.canonicalize(x_opt[best])
    return TreeCandidate(
        candidate=candidate.detach(), value=values[best].detach(),
        path=best // num_restarts, path_values=path_values.detach(),
    )
