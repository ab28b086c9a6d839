r"""Any acquisition function over all paths of a
[`TreeSpace`][treebo.space.tree_space.TreeSpace].

[`optimize_acqf_tree()`][treebo.optim.tree_optimize.optimize_acqf_tree] maximizes any
BoTorch acquisition function (e.g. ``LogExpectedImprovement``) over all paths at once:
the restarts of every path are stacked in one batch in which each row frees only its
path's active continuous columns. The helpers here (starts perturbed around the best
observations, distinct rows, input checks) are shared by the family-specific optimizers.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor

from treebo.optim.lbfgsb import maximize_batched
from treebo.space import TreeSpace


@dataclass
class TreeCandidate:
    """Result of a tree-aware acquisition optimization.

    Attributes:
        candidate: ``1 x d`` encoded point.
        value: Acquisition value at the candidate (scalar tensor).
        path: Index of the chosen path in ``space.paths()`` (``None`` for
            optimizers that do not list paths).
        path_values: ``P`` tensor: the best acquisition value found per path
            (or per start, for optimizers that do not list paths).
        path_candidates: ``P x d``: each path's (or start's) point (row ``p`` scores
            ``path_values[p]``), canonicalized; for `optimize_add_tree_ucb()`,
            ``vertex_point`` with that path's choices.
        vertex_point: For `optimize_add_tree_ucb()`, the ``1 x d`` point that holds
            every vertex's own optimum (each path's point is this one with that path's
            choices); ``None`` otherwise.
    """

    candidate: Tensor
    value: Tensor
    path: int | None
    path_values: Tensor
    path_candidates: Tensor | None = None
    vertex_point: Tensor | None = None


def check_optimizer_inputs(
    space: TreeSpace, num_restarts: int, raw_samples: int
) -> None:
    """Raise a named error for a wrong space or start counts."""
    if not isinstance(space, TreeSpace):
        raise TypeError(f"space must be a TreeSpace, got {type(space).__name__}.")
    if num_restarts < 1 or raw_samples < num_restarts:
        raise ValueError(
            f"need 1 <= num_restarts <= raw_samples, got num_restarts={num_restarts}, "
            f"raw_samples={raw_samples}."
        )


def reference_tensor(acq_function: AcquisitionFunction) -> Tensor:
    """A tensor with the device and dtype of the acquisition's model."""
    model = getattr(acq_function, "model", None)
    if model is not None:
        return model.train_inputs[0]
    return torch.zeros(1, dtype=torch.float64)


def distinct_rows(X: Tensor) -> Tensor:
    """Indices of the first occurrence of each distinct row of ``X`` (``n x c``),
    in row order."""
    _, inverse = torch.unique(X, dim=0, return_inverse=True)
    first = torch.full((int(inverse.max()) + 1,), X.shape[0], device=X.device)
    first = first.scatter_reduce(
        0, inverse, torch.arange(X.shape[0], device=X.device), "amin"
    )
    return first.sort().values


def perturb_around(
    space: TreeSpace,
    X: Tensor,
    n_per_point: int = 16,
    scales: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4, 1e-6),
    generator: torch.Generator | None = None,
) -> Tensor:
    r"""Gaussian perturbations of the active continuous values of given points.

    Used to start the acquisition optimizer near the best observations, where
    the optimum of a converging search lies (like BoTorch's
    ``sample_around_best``); the scales span several orders of magnitude so that
    the optimizer can resolve the optimum to high precision.

    Args:
        space: The search space.
        X: ``k x d`` encoded points.
        n_per_point: Perturbations per point (spread over the scales).
        scales: Standard deviations, as fractions of each column's range.
        generator: Optional random generator.

    Returns:
        ``(k * n_per_point) x d`` valid encoded points on the same paths.
    """
    if X.numel() == 0:
        return X.reshape(0, space.dim)
    bounds = space.bounds.to(X)
    base = X.repeat_interleave(n_per_point, 0)
    sd = (
        torch.tensor(scales, dtype=X.dtype)
        .repeat(n_per_point // len(scales) + 1)[:n_per_point]
        .repeat(X.shape[0])
        .to(X)
    )
    noise = torch.randn(base.shape, generator=generator, dtype=X.dtype).to(X)
    step = noise * sd.unsqueeze(-1) * (bounds[1] - bounds[0])
    continuous = torch.zeros(space.dim, dtype=torch.bool, device=X.device)
    continuous[space.continuous_columns] = True
    moved = torch.where(continuous, base + step, base)
    return space.canonicalize(moved)


def optimize_acqf_tree(
    acq_function: AcquisitionFunction,
    space: TreeSpace,
    num_restarts: int = 4,
    raw_samples: int = 128,
    seed: int | None = None,
    maxiter: int = 200,
    around: Tensor | None = None,
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
        around: Optional ``k x d`` points (e.g. the best observations); their
            perturbations are scored too and the best ``num_restarts`` of them
            are added as starts (each on its own path).

    Returns:
        A [`TreeCandidate`][treebo.optim.tree_optimize.TreeCandidate].
    """
    check_optimizer_inputs(space, num_restarts, raw_samples)
    ref = reference_tensor(acq_function)
    P = space.num_paths
    gen = torch.Generator()
    if seed is not None:
        gen.manual_seed(seed)
    raw = space.sample(P * raw_samples, generator=gen, canonical=False).to(ref)
    path_idx = torch.arange(P, device=ref.device).repeat_interleave(raw_samples)
    raw = space.set_paths(raw, path_idx)
    with torch.no_grad():
        raw_values = acq_function(raw.unsqueeze(-2)).reshape(P, raw_samples)
    top = raw_values.topk(num_restarts, dim=1).indices  # P x R
    rows = top + torch.arange(P, device=ref.device).unsqueeze(-1) * raw_samples
    x0 = raw[rows.flatten()]  # (P R) x d
    if around is not None and around.numel():
        local = perturb_around(space, around.to(ref), generator=gen)
        with torch.no_grad():
            local_values = acq_function(local.unsqueeze(-2))
        best_local = local_values.topk(min(num_restarts, local.shape[0])).indices
        x0 = torch.cat([x0, local[best_local]])
    continuous = torch.zeros(space.dim, dtype=torch.bool, device=ref.device)
    continuous[space.continuous_columns] = True
    free = (space.column_activity(x0) & continuous).unsqueeze(-2)
    x0 = x0.unsqueeze(-2)  # b x 1 x d
    bounds = space.bounds.to(ref)
    x_opt, values = maximize_batched(
        acq_function, x0, bounds[0], bounds[1], free=free, maxiter=maxiter
    )
    with torch.no_grad():
        start = acq_function(x0)
    keep = values >= start
    x_opt = torch.where(keep.view(-1, 1, 1), x_opt, x0)
    values = torch.where(keep, values, start)
    # Best value per path (rows are assigned to the path they lie on).
    on_path = space.tree.vertex_activity(x_opt.squeeze(-2)).to(values)
    path_mask = space.tree.path_vertex_mask.to(values)
    row_path = ((on_path @ path_mask.T) == path_mask.sum(-1)).float().argmax(-1)
    path_values = torch.full((P,), -torch.inf, dtype=values.dtype, device=values.device)
    path_values = path_values.scatter_reduce(0, row_path, values, reduce="amax")
    # The row holding each path's best value (every path has raw-sample rows).
    is_best = values.unsqueeze(0) == path_values.unsqueeze(-1)  # P x b
    is_best &= row_path.unsqueeze(0) == torch.arange(P, device=ref.device).unsqueeze(-1)
    path_rows = is_best.to(torch.uint8).argmax(-1)
    path_candidates = space.canonicalize(x_opt.squeeze(-2)[path_rows])
    best = int(values.argmax())
    candidate = space.canonicalize(x_opt[best])
    return TreeCandidate(
        candidate=candidate.detach(),
        value=values[best].detach(),
        path=int(row_path[best]),
        path_values=path_values.detach(),
        path_candidates=path_candidates.detach(),
    )
