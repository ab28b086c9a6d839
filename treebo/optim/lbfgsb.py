r"""Batched multi-start L-BFGS-B with per-entry bounds and frozen entries.

All restarts are stacked in one ``b x q x d`` tensor and optimized together:
the objective is the sum of a batch-separable function, so the gradient of the
sum with respect to one restart is that restart's own gradient. Evaluation
runs on the device and dtype of ``x0``; only the flat vector of free entries
crosses to SciPy.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

import numpy as np
import torch
from scipy.optimize import minimize
from torch import Tensor

#: ``evaluate(fun, x) -> (total, gradient)`` or ``None``: how
#: [`maximize_batched()`][treebo.optim.lbfgsb.maximize_batched] evaluates the sum of
#: its objective and the gradient in the current context. ``None`` (the default):
#: [`value_and_gradient()`][treebo.optim.lbfgsb.value_and_gradient], alone; a runner
#: of many runs sets it in each run's context to evaluate many runs' acquisitions as
#: one batch ([`run_in_lockstep()`][treebo.loop.lockstep.run_in_lockstep]).
function_evaluation: ContextVar[
    Callable[[Callable[[Tensor], Tensor], Tensor], tuple[Tensor, Tensor]] | None
] = ContextVar("function_evaluation", default=None)


def value_and_gradient(
    fun: Callable[[Tensor], Tensor], x: Tensor
) -> tuple[Tensor, Tensor]:
    """The sum of ``fun(x)`` (detached) and its gradient with respect to ``x``.

    Example:
        >>> total, grad = value_and_gradient(lambda x: (x**2).sum(-1), torch.ones(2, 3))
        >>> float(total), grad.tolist()
        (6.0, [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]])
    """
    x = x.detach().requires_grad_(True)
    total = fun(x).sum()
    (grad,) = torch.autograd.grad(total, x)
    return total.detach(), grad


def maximize_batched(
    fun: Callable[[Tensor], Tensor],
    x0: Tensor,
    lower: Tensor,
    upper: Tensor,
    free: Tensor | None = None,
    maxiter: int = 200,
    ftol: float = 1e-12,
    gtol: float = 1e-9,
) -> tuple[Tensor, Tensor]:
    r"""Maximize a batch-separable function from many starts at once.

    Args:
        fun: Maps ``batch x ...`` points (shaped like ``x0``) to a tensor whose
            entries depend on disjoint parts of the input (e.g. ``batch`` values,
            or ``batch x V`` per-vertex values); their sum is maximized.
        x0: Starting points, any shape.
        lower: Lower bounds, broadcastable to ``x0``.
        upper: Upper bounds, broadcastable to ``x0``.
        free: Optional boolean mask broadcastable to ``x0``; entries outside it
            stay at their ``x0`` value.
        maxiter: L-BFGS-B iteration limit.
        ftol: Relative objective tolerance.
        gtol: Projected-gradient tolerance.

    Returns:
        ``(x, values)``: the optimized points (shape of ``x0``) and
        ``fun(x)`` at them (detached).
    """
    x0 = x0.detach()
    lower = torch.as_tensor(lower).to(x0).expand_as(x0)
    upper = torch.as_tensor(upper).to(x0).expand_as(x0)
    if (lower > upper).any():
        raise ValueError("maximize_batched: some lower bounds exceed upper bounds.")
    free = (
        torch.ones_like(x0, dtype=torch.bool)
        if free is None
        else torch.as_tensor(free, device=x0.device).bool().expand_as(x0)
    )
    free = free & (upper > lower)
    x_start = torch.minimum(torch.maximum(x0, lower), upper)
    n_free = int(free.sum())
    if n_free == 0:
        with torch.no_grad():
            return x_start, fun(x_start).detach()

    base = x_start.clone()
    lo = lower[free].cpu().numpy()
    up = upper[free].cpu().numpy()

    def assemble(z: np.ndarray) -> Tensor:
        x = base.clone()
        x[free] = torch.as_tensor(z, device=x0.device, dtype=x0.dtype)
        return x

    evaluate = function_evaluation.get() or value_and_gradient

    def f_and_g(z: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = evaluate(fun, assemble(z))
        g = -grad[free].detach().cpu().double().numpy()
        value = -float(total)
        if not np.isfinite(value):
            return np.inf, np.zeros_like(z)
        return value, np.nan_to_num(g)

    res = minimize(
        f_and_g,
        x_start[free].cpu().double().numpy(),
        jac=True,
        method="L-BFGS-B",
        bounds=list(zip(lo, up, strict=False)),
        options={"maxiter": maxiter, "ftol": ftol, "gtol": gtol},
    )
    x = assemble(np.clip(res.x, lo, up))
    with torch.no_grad():
        return x, fun(x).detach()
