r"""Fitting the per-leaf models: maximum a posteriori hyper-parameters.

[`fit_leaf_gp()`][treebo.jenatton.fit.fit_leaf_gp] maximizes
$\log p(y \mid \theta) + \log p(\theta)$ (the closed-form marginal likelihood of
[`LeafGP.marginal_log_likelihood()`][treebo.jenatton.leaf_gp.LeafGP.marginal_log_likelihood]
and its hyper-priors) over every leaf's lengthscales, output scale and mean,
the noise and the shared coefficients' prior variance, jointly, by scipy's
L-BFGS-B: one batched evaluation (and its gradient) per step, whatever the
number of leaves.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.optimize import minimize

from treebo.jenatton.leaf_gp import LeafGP

#: The fit's default L-BFGS-B iterations.
FIT_MAXITER = 100


def fit_leaf_gp(model: LeafGP, maxiter: int = FIT_MAXITER) -> LeafGP:
    """Fit ``model``'s hyper-parameters in place; returns it in eval mode.

    Args:
        model: A [`LeafGP`][treebo.jenatton.leaf_gp.LeafGP]
            ([`JenattonTreeGP`][treebo.jenatton.model.JenattonTreeGP],
            [`IndependentLeafGP`][treebo.jenatton.model.IndependentLeafGP]).
        maxiter: L-BFGS-B iterations.

    Raises:
        RuntimeError: The fit ended at non-finite values.

    Example:
        >>> from treebo.jenatton import IndependentLeafGP
        >>> from treebo.test_functions import Jenatton
        >>> problem = Jenatton()
        >>> X = problem.space.sample(16, seed=0)
        >>> model = IndependentLeafGP(X, problem(X).unsqueeze(-1), problem.space)
        >>> before = float(model.marginal_log_likelihood())
        >>> after = float(fit_leaf_gp(model).marginal_log_likelihood())
        >>> after > before
        True
    """
    if isinstance(maxiter, bool) or not isinstance(maxiter, int) or maxiter < 1:
        raise ValueError(f"maxiter must be a positive integer, got {maxiter!r}.")
    model.train()
    parameters = [p for p in model.parameters() if p.requires_grad]
    sizes = [p.numel() for p in parameters]
    n = float(model.leaf_valid.sum())
    start = torch.cat([p.detach().reshape(-1) for p in parameters])

    def load(vector: np.ndarray) -> None:
        values = torch.as_tensor(vector).to(start)
        with torch.no_grad():
            for p, chunk in zip(parameters, values.split(sizes), strict=True):
                p.copy_(chunk.reshape(p.shape))

    def loss_and_grad(vector: np.ndarray) -> tuple[float, np.ndarray]:
        load(vector)
        try:
            loss = -(model.marginal_log_likelihood() + model.log_prior()) / n
            grads = torch.autograd.grad(loss, parameters, allow_unused=True)
        except torch.linalg.LinAlgError:  # a singular factor: reject the step
            return math.inf, np.zeros_like(vector)
        grad = torch.cat(
            [
                torch.zeros_like(p).reshape(-1) if g is None else g.reshape(-1)
                for p, g in zip(parameters, grads, strict=True)
            ]
        )
        if not (loss.isfinite() and grad.isfinite().all()):
            return math.inf, np.zeros_like(vector)
        return float(loss.detach()), grad.cpu().numpy()

    x0 = start.cpu().numpy()
    result = minimize(
        loss_and_grad, x0, jac=True, method="L-BFGS-B", options={"maxiter": maxiter}
    )
    best = result.x if np.isfinite(result.fun) else x0
    load(best)
    if not all(bool(p.isfinite().all()) for p in parameters):
        raise RuntimeError("the fit of the leaf GPs ended at non-finite values")
    return model.eval()
