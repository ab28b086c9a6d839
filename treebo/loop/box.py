r"""Minimizing a function of a tensor over a box:
[`minimize_box()`][treebo.loop.box.minimize_box].

For objectives of many continuous variables (tens to thousands) written on tensors,
naming each variable is a chore. [`minimize_box()`][treebo.loop.box.minimize_box] builds
the space from a ``2 x d`` tensor of bounds (variables ``x0, x1, ...``), calls the
objective with a ``d`` tensor, and returns the evaluated points as tensors besides the
usual result. Everything else (strategies, failures, checkpoints, parallel workers) is
[`minimize()`][treebo.loop.run.minimize]'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from treebo.loop.history import OptimizationResult
from treebo.loop.run import minimize
from treebo.space import ConfigurationError, Real, TreeSpace, Vertex
from treebo.strategies.base import Strategy


def box_space(bounds: Tensor) -> TreeSpace:
    """A space of one vertex with real parameters ``x0 .. x{d-1}`` in ``bounds``.

    Raises:
        ConfigurationError: If ``bounds`` is not ``2 x d`` with finite
            ``lower < upper`` in every column (naming the first bad one).
    """
    bounds = torch.as_tensor(bounds, dtype=torch.float64)
    if bounds.dim() != 2 or bounds.shape[0] != 2 or bounds.shape[1] < 1:
        raise ConfigurationError(
            f"bounds must be a 2 x d tensor, got shape {tuple(bounds.shape)}."
        )
    bad = ~(bounds.isfinite().all(0) & (bounds[0] < bounds[1]))
    if bad.any():
        i = int(bad.nonzero()[0])
        raise ConfigurationError(
            f"bounds of 'x{i}' must be finite with lower < upper, got "
            f"{bounds[:, i].tolist()}."
        )
    params = [Real(f"x{i}", lo, hi) for i, (lo, hi) in enumerate(bounds.T.tolist())]
    return TreeSpace(Vertex(params))


@dataclass
class BoxResult(OptimizationResult):
    """What [`minimize_box()`][treebo.loop.box.minimize_box] returns: an
    [`OptimizationResult`][treebo.loop.history.OptimizationResult] plus tensors.

    Attributes:
        X: ``n x d`` every evaluated point, in order (failures included).
        Y: ``n`` their values (NaN for failures).
        best_x: ``d`` the recommended point, ``best_params`` as a tensor (``None``
            if every evaluation failed).
    """

    X: Tensor | None = None
    Y: Tensor | None = None
    best_x: Tensor | None = None


def minimize_box(
    objective: Callable[[Tensor], float | Tensor],
    bounds: Tensor,
    budget: int,
    seed: int | None = None,
    *,
    strategy: str | Strategy | None = None,
    **kwargs: Any,
) -> BoxResult:
    r"""Minimize ``objective(x)`` for ``x`` (a ``d`` float64 tensor) in a box.

    Args:
        objective: Takes a ``d`` tensor, returns a float or a one-element
            tensor. Exceptions and non-finite results are failed trials.
        bounds: ``2 x d`` lower and upper bounds.
        budget: Number of evaluations.
        seed: Seed for reproducibility.
        strategy: A strategy's name (default ``"tree_additive"``, for functions of
            many variables that interact mostly in pairs) or a Strategy (e.g.
            ``TreeAdditiveStrategy(TreeAdditiveOptions(edges=...))``).
        **kwargs: Passed to [`minimize()`][treebo.loop.run.minimize] (``maximize``,
            ``n_initial``, ``checkpoint``, ``n_workers``, ...).

    Returns:
        A [`BoxResult`][treebo.loop.box.BoxResult].

    Example:
        >>> bounds = torch.tensor([[-1.0] * 20, [1.0] * 20])
        >>> result = minimize_box(
        ...     lambda x: (x - 0.3).square().sum(), bounds, budget=20, seed=0
        ... )
        >>> result.X.shape, result.best_x.shape
        (torch.Size([20, 20]), torch.Size([20]))
    """
    space = box_space(bounds)
    names = space.parameter_names
    if not callable(objective):
        raise TypeError("objective must be callable.")

    def on_dict(params: dict[str, Any]) -> float:
        x = torch.tensor([params[n] for n in names], dtype=torch.float64)
        value = objective(x)
        if isinstance(value, Tensor) and value.numel() == 1:
            value = float(value.detach().reshape(()))
        return value  # several values: minimize() stops with an error

    if strategy is None and "model" not in kwargs:  # model=: deprecated
        strategy = "tree_additive"
    result = minimize(on_dict, space, budget, seed, strategy=strategy, **kwargs)
    X = torch.tensor(
        [[t.params[n] for n in names] for t in result.history], dtype=torch.float64
    ).reshape(-1, len(names))
    Y = torch.tensor(
        [float("nan") if t.value is None else t.value for t in result.history],
        dtype=torch.float64,
    )
    best_x = (
        None
        if result.best_params is None
        else torch.tensor([result.best_params[n] for n in names], dtype=torch.float64)
    )
    return BoxResult(
        best_params=result.best_params,
        best_value=result.best_value,
        history=result.history,
        best_observed_value=result.best_observed_value,
        maximize=result.maximize,
        X=X,
        Y=Y,
        best_x=best_x,
    )
