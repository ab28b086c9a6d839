r"""Batched L-BFGS-B: many starts, or many independent problems, at once.

:func:`maximize_batched` stacks all restarts in one ``b x q x d`` tensor and
optimizes them together: the objective is the sum of a batch-separable
function, so the gradient of the sum with respect to one restart is that
restart's own gradient. Evaluation runs on the device and dtype of ``x0``;
only the flat vector of free entries crosses to SciPy.

:func:`minimize_independent` solves ``B`` independent problems of the same
shape, each with its own L-BFGS-B state (line search, curvature pairs,
stopping test), so that a problem with easy curvature stops early and a
badly scaled one does not shrink the steps of the others; every round
evaluates all problems still running in one call.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from botorch.optim.utils import check_scipy_version_at_least
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits
from torch import Tensor

#: SciPy minor versions (1.x) whose L-BFGS-B BoTorch's batched port
#: (``botorch.optim.batched_lbfgs_b``) supports; the same range as BoTorch's
#: ``gen_candidates_scipy``.
BATCHED_SCIPY_MINORS = (13, 18)


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

    def f_and_g(z: np.ndarray) -> tuple[float, np.ndarray]:
        x = assemble(z).requires_grad_(True)
        total = fun(x).sum()
        (grad,) = torch.autograd.grad(total, x)
        g = -grad[free].detach().cpu().double().numpy()
        value = -float(total.detach())
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


def batched_lbfgsb_available() -> bool:
    """Whether BoTorch's batched L-BFGS-B supports the installed SciPy."""
    low, high = BATCHED_SCIPY_MINORS
    return check_scipy_version_at_least(minor=low) and not (
        check_scipy_version_at_least(minor=high)
    )


def minimize_independent(
    values_and_grads: Callable[[Tensor], tuple[Tensor, Tensor]],
    x0: Tensor,
    lower: Tensor,
    upper: Tensor | None = None,
    maxiter: int = 200,
    ftol: float = 1e-9,
    gtol: float = 1e-5,
) -> tuple[Tensor, Tensor, Tensor]:
    r"""Minimize ``B`` independent problems of ``P`` variables each.

    Problem ``b`` is :math:`\min_{\ell \le x_b \le u} f_b(x_b)`; one call of
    ``values_and_grads`` returns every :math:`f_b` and its gradient. With
    BoTorch's batched L-BFGS-B (SciPy 1.13-1.17) each problem runs its own
    L-BFGS-B and stops on its own test; ``maxiter`` and ``ftol`` apply per
    problem. With other SciPy versions the problems are solved as one
    L-BFGS-B run on :math:`\sum_b f_b` (the same minimizers, reached with one
    shared line search).

    Args:
        values_and_grads: Maps ``B x P`` points to ``B`` values and their
            ``B x P`` gradients (row ``b`` of both may depend on row ``b`` of
            the input only). Non-finite values count as :math:`+\infty`.
        x0: ``B x P`` starting points.
        lower: ``P`` lower bounds (``-inf`` for none), shared by the problems.
        upper: ``P`` upper bounds (``None`` or ``inf``: none).
        maxiter: L-BFGS-B iterations of each problem.
        ftol: Relative tolerance on each problem's value.
        gtol: Tolerance on each problem's projected gradient.

    Returns:
        ``(x, values, iterations)``: the ``B x P`` minimizers, their ``B``
        values and the ``B`` iteration counts.

    Example:
        >>> import torch
        >>> target = torch.tensor([[1.0, 2.0], [-3.0, 0.5]], dtype=torch.float64)
        >>> def f(x):
        ...     return (x - target).square().sum(-1), 2 * (x - target)
        >>> lower = torch.tensor([0.0, 0.0], dtype=torch.float64)
        >>> x, values, _ = minimize_independent(f, torch.ones(2, 2).double(), lower)
        >>> x.round(decimals=4)
        tensor([[1.0000, 2.0000],
                [0.0000, 0.5000]], dtype=torch.float64)
    """
    upper = torch.full_like(lower, float("inf")) if upper is None else upper
    if x0.dim() != 2 or lower.shape != x0.shape[-1:] or upper.shape != lower.shape:
        raise ValueError(
            f"x0 must be B x P and lower and upper P, got {tuple(x0.shape)}, "
            f"{tuple(lower.shape)} and {tuple(upper.shape)}."
        )
    if bool((lower > upper).any()):
        raise ValueError("minimize_independent: some lower bounds exceed upper bounds.")
    if maxiter < 1:
        raise ValueError(f"maxiter must be >= 1, got {maxiter}.")
    current = x0.detach().clamp(lower.to(x0), upper.to(x0)).clone()
    bounds = [
        (float(lo), float(hi) if math.isfinite(hi) else None)
        for lo, hi in zip(lower.tolist(), upper.tolist(), strict=True)
    ]

    def evaluate(x: Tensor) -> tuple[Tensor, Tensor]:
        values, grads = values_and_grads(x)
        bad = ~values.isfinite()
        values = values.detach().masked_fill(bad, float("inf"))
        grads = grads.detach().masked_fill(bad.unsqueeze(-1), 0.0).nan_to_num()
        return values, grads

    if batched_lbfgsb_available():
        from botorch.optim.batched_lbfgs_b import fmin_l_bfgs_b_batched

        def batch_fun(z: np.ndarray, batch_indices: list[int]):
            # Problems that are not asked for keep their last point: no row
            # depends on another, so their values are simply not read.
            rows = torch.as_tensor(batch_indices, device=current.device)
            current[rows] = torch.as_tensor(z, device=current.device).to(current)
            values, grads = evaluate(current)
            values, grads = values[rows].cpu().double(), grads[rows].cpu().double()
            return values.numpy(), grads.numpy()

        # SciPy's L-BFGS-B calls BLAS on tiny arrays, where a multithreaded
        # BLAS only adds overhead (BoTorch limits it the same way).
        with threadpool_limits(limits=1, user_api="blas"):
            xs, fs, results = fmin_l_bfgs_b_batched(
                batch_fun,
                current.cpu().double().numpy(),
                bounds=bounds,
                factr=None,
                ftol=ftol,
                pgtol=gtol,
                maxiter=maxiter,
                pass_batch_indices=True,
            )
        x = torch.as_tensor(xs, device=x0.device).to(x0)
        values = torch.as_tensor(fs, device=x0.device).to(x0)
        steps = torch.tensor([int(r["nit"]) for r in results], device=x0.device)
        return x, values, steps

    shape = current.shape

    def joint_fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        x = torch.as_tensor(z, device=current.device).to(current).reshape(shape)
        values, grads = evaluate(x)
        return float(values.sum()), grads.reshape(-1).cpu().double().numpy()

    with threadpool_limits(limits=1, user_api="blas"):
        res = minimize(
            joint_fun,
            current.reshape(-1).cpu().double().numpy(),
            jac=True,
            method="L-BFGS-B",
            bounds=bounds * shape[0],
            options={"maxiter": maxiter, "ftol": ftol, "gtol": gtol},
        )
    x = torch.as_tensor(res.x, device=x0.device).to(x0).reshape(shape)
    values, _ = evaluate(x)
    steps = torch.full((shape[0],), int(res.nit), device=x0.device)
    return x, values, steps
