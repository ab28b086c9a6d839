r"""Acquisition optimization over choices, categoricals, integers and reals
together, at a cost that does not grow with the number of paths.

[`optimize_acqf_mixed_tree()`][treebo.optim.mixed.optimize_acqf_mixed_tree] alternates,
for many starts at once,

1. a batched L-BFGS-B run over each start's active real and integer columns
   (integers relaxed), after which integers are rounded (from the second
   round on, only for the starts that the discrete step moved); and
2. a discrete step: every *neighbour* of every start (one choice, categorical
   or integer changed, by one value for an integer) is scored in one batch and
   each start moves to its best neighbour if that improves it,

until no start moves. A choice that switches branch activates columns whose
values each start keeps from its random draw (its *latent* values), so new
branches are entered at fresh points rather than at their lower bounds. The
work per round is ``R x M`` acquisition values for ``R`` starts and
``M = sum_c K_c + 2 n_int`` neighbours (``K_c`` labels per choice or
categorical, ``n_int`` integers): linear in the number of parameters, never in
the number of paths (``2^k`` for ``k`` flags). This is the alternating scheme
of BoTorch's ``optimize_acqf_mixed_alternating``, on tree-structured spaces.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor

from treebo.optim.lbfgsb import maximize_batched
from treebo.optim.tree_optimize import (
    TreeCandidate,
    check_optimizer_inputs,
    distinct_rows,
    perturb_around,
    reference_tensor,
)
from treebo.space import TreeSpace
from treebo.space.configurations import MAX_LISTED_PATHS


def _scored_neighbours(
    space: TreeSpace,
    table: NeighbourTable,
    latent: Tensor,
    score: Callable[[Tensor], Tensor],
) -> tuple[Tensor, Tensor]:
    """Every neighbour of every row (``R x M x d``) and its value (``R x M``,
    ``-inf`` for moves that change nothing active)."""
    N, valid = table.neighbours(space, latent)
    values = score(N.reshape(-1, space.dim)).reshape(valid.shape)
    return N, values.masked_fill(~valid, -torch.inf)


def lists_paths(space: TreeSpace) -> bool:
    """Whether ``space`` is optimized path by path (`optimize_acqf_tree()`):
    at most `MAX_LISTED_PATHS` paths and no integer or categorical parameters; else by
    [`optimize_acqf_mixed_tree()`][treebo.optim.mixed.optimize_acqf_mixed_tree]."""
    return (
        space.num_paths <= MAX_LISTED_PATHS
        and not space.integer_columns
        and not space.categorical_columns
    )


class NeighbourTable:
    """The discrete moves of a space, as tensors
    ([`of()`][treebo.optim.mixed.NeighbourTable.of] builds them once per space).

    Attributes:
        columns: ``M`` column changed by each move.
        values: ``M`` label code set by each move (NaN for integer steps).
        steps: ``M`` integer step (``+1``/``-1``; 0 for label moves).
        log_scale: ``M`` boolean: the integer column is on a log scale.
    """

    def __init__(self, space: TreeSpace) -> None:
        columns, values, steps, log = [], [], [], []
        for name, codes in space.choice_codes.items():
            c = space.columns[name]
            if c.role == "integer":  # an ordered categorical: steps of 1
                continue
            for code in codes.values():
                columns.append(c.column)
                values.append(code)
                steps.append(0.0)
                log.append(False)
        for col in space.integer_columns:
            param = space.columns[space.parameter_names[col]].param
            for step in (1.0, -1.0):
                columns.append(col)
                values.append(float("nan"))
                steps.append(step)
                log.append(bool(getattr(param, "log_scale", False)))
        self.columns = torch.tensor(columns, dtype=torch.long)
        self.values = torch.tensor(values, dtype=torch.float64)
        self.steps = torch.tensor(steps, dtype=torch.float64)
        self.log_scale = torch.tensor(log, dtype=torch.bool)

    @classmethod
    def of(cls, space: TreeSpace) -> NeighbourTable:
        """The table of ``space``, built on first use and kept with it."""
        table = _TABLES.get(space)
        if table is None:
            table = _TABLES[space] = cls(space)
        return table

    @property
    def size(self) -> int:
        return int(self.columns.numel())

    def neighbours(self, space: TreeSpace, latent: Tensor) -> tuple[Tensor, Tensor]:
        """Every move applied to every row.

        Args:
            space: The space.
            latent: ``R x d`` rows (inactive columns hold latent values).

        Returns:
            ``(N, valid)``: ``R x M x d`` moved latent rows, and an ``R x M``
            mask of the moves that change an active column.
        """
        R, M = latent.shape[0], self.size
        cols = self.columns.to(latent.device)
        current = latent[:, cols]  # R x M
        log = self.log_scale.to(latent.device)
        steps = self.steps.to(latent)
        stepped = torch.where(
            log,
            (torch.pow(10.0, current).round() + steps).clamp_min(1.0).log10(),
            current + steps,
        )
        new = torch.where(
            self.values.to(latent).isnan(), stepped, self.values.to(latent)
        )
        bounds = space.bounds.to(latent)[:, cols]
        new = torch.minimum(torch.maximum(new, bounds[0]), bounds[1])
        active = space.column_activity(space.canonicalize(latent))[:, cols]
        valid = active & ((new - current).abs() > 1e-9)
        N = latent.unsqueeze(1).repeat(1, M, 1)
        N.scatter_(2, cols.expand(R, M).unsqueeze(-1), new.unsqueeze(-1))
        return N, valid


_TABLES: weakref.WeakKeyDictionary[TreeSpace, NeighbourTable] = (
    weakref.WeakKeyDictionary()
)


def optimize_acqf_mixed_tree(
    acq_function: AcquisitionFunction,
    space: TreeSpace,
    num_restarts: int = 10,
    raw_samples: int = 512,
    seed: int | None = None,
    maxiter: int = 100,
    around: Tensor | None = None,
    max_rounds: int = 8,
) -> TreeCandidate:
    r"""Maximize a ``b x 1 x d -> b`` acquisition by alternating continuous and
    discrete steps from many starts (see the module docstring).

    Args:
        acq_function: Any single-point BoTorch acquisition function.
        space: The search space.
        num_restarts: Starts optimized together.
        raw_samples: Random configurations scored to choose the starts (every
            choice and categorical uniform).
        seed: Seed for the random configurations.
        maxiter: L-BFGS-B iteration limit of the first continuous step (half
            of it for later ones, which start from points already optimized
            in all but the changed discrete setting).
        around: Optional ``k x d`` points (e.g. the best observations); their
            perturbations join the random configurations.
        max_rounds: Most continuous + discrete rounds.

    Returns:
        A [`TreeCandidate`][treebo.optim.tree_optimize.TreeCandidate] whose ``path`` is
        ``None`` and whose ``path_candidates`` are the starts' final points and their
        neighbours (valid, distinct rows, best first), with their values in
        ``path_values``.

    Example:
        >>> import torch
        >>> from botorch.acquisition import PosteriorMean
        >>> from botorch.models import SingleTaskGP
        >>> from treebo import Categorical, Integer, Real, TreeSpace, Vertex
        >>> space = TreeSpace(Vertex([Real("x", 0, 1), Integer("n", 1, 9),
        ...                           Categorical("c", ["a", "b", "c"])]))
        >>> X = space.sample(12, seed=0)
        >>> model = SingleTaskGP(X, -(X - 0.3).pow(2).sum(-1, keepdim=True))
        >>> result = optimize_acqf_mixed_tree(PosteriorMean(model), space, seed=0)
        >>> result.candidate.shape
        torch.Size([1, 3])
    """
    check_optimizer_inputs(space, num_restarts, raw_samples)
    if (
        isinstance(max_rounds, bool)
        or not isinstance(max_rounds, int)
        or max_rounds < 1
    ):
        raise ValueError(f"max_rounds must be an integer >= 1, got {max_rounds!r}.")
    ref = reference_tensor(acq_function)
    gen = torch.Generator()
    if seed is not None:
        gen.manual_seed(seed)
    raw = space.sample(raw_samples, generator=gen, canonical=False).to(ref)
    if around is not None and around.numel():
        raw = torch.cat([raw, perturb_around(space, around.to(ref), generator=gen)])

    def score(latent: Tensor) -> Tensor:
        with torch.no_grad():
            return acq_function(space.canonicalize(latent).unsqueeze(-2))

    raw_values = score(raw)
    latent = raw[raw_values.topk(min(num_restarts, raw.shape[0])).indices]
    values = score(latent)
    table = NeighbourTable.of(space)
    bounds = space.bounds.to(ref)
    continuous = torch.zeros(space.dim, dtype=torch.bool, device=ref.device)
    continuous[space.continuous_columns] = True
    todo = torch.ones(latent.shape[0], dtype=torch.bool, device=ref.device)
    scored = None  # the neighbours of the current starts, once scored
    for round_ in range(max_rounds):
        # 1. Continuous step on the active real and integer columns of the
        # starts whose discrete setting changed (the others are at an optimum).
        rows = todo.nonzero().squeeze(-1)
        start = space.canonicalize(latent[rows])
        free = space.column_activity(start) & continuous
        if bool(free.any()):
            x_opt, _ = maximize_batched(
                acq_function,
                start.unsqueeze(-2),
                bounds[0],
                bounds[1],
                free=free.unsqueeze(-2),
                maxiter=maxiter if round_ == 0 else max(1, maxiter // 2),
            )
            moved = torch.where(free, x_opt.squeeze(-2), latent[rows])
            moved_values = score(moved)  # integers rounded by canonicalize
            better = moved_values > values[rows]
            latent[rows] = torch.where(better.unsqueeze(-1), moved, latent[rows])
            values[rows] = torch.where(better, moved_values, values[rows])
        # 2. Discrete step: the best neighbour of each start, if it improves.
        if table.size == 0:
            break
        N, n_values = scored = _scored_neighbours(space, table, latent, score)
        best_values, best = n_values.max(-1)
        todo = best_values > values
        if not bool(todo.any()):
            break
        scored = None  # the starts move
        chosen = N[torch.arange(N.shape[0], device=ref.device), best]
        latent = torch.where(todo.unsqueeze(-1), chosen, latent)
        values = torch.where(todo, best_values, values)
    # Alternatives: the starts' points and, for a caller that must avoid a
    # point (e.g. one already evaluated), their valid neighbours.
    points = space.canonicalize(latent)
    if table.size:
        if scored is None:
            scored = _scored_neighbours(space, table, latent, score)
        N, n_values = scored
        valid = n_values > -torch.inf
        points = torch.cat([points, space.canonicalize(N[valid])])
        values = torch.cat([values, n_values[valid]])
    order = values.argsort(descending=True)
    points, values = points[order], values[order]
    keep = distinct_rows(points)
    points, values = points[keep], values[keep]
    return TreeCandidate(
        candidate=points[:1].detach(),
        value=values[0].detach(),
        path=None,
        path_values=values.detach(),
        path_candidates=points.detach(),
    )
