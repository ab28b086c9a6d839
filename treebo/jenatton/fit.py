r"""Fitting the per-leaf models: maximum a posteriori hyper-parameters.

[`fit_leaf_gp()`][treebo.jenatton.fit.fit_leaf_gp] maximizes
$\log p(y \mid \theta) + \log p(\theta)$ (the closed-form marginal likelihood of
[`LeafGP.marginal_log_likelihood()`][treebo.jenatton.model.LeafGP.marginal_log_likelihood]
and its hyper-priors) over every leaf's lengthscales, output scale and mean,
the noise and the shared coefficients' prior variance, jointly, by L-BFGS
with a strong Wolfe line search: one batched evaluation per step, whatever
the number of leaves.
"""

from __future__ import annotations

import torch

from treebo.jenatton.model import LeafGP

#: The fit's default L-BFGS iterations.
FIT_MAXITER = 100


def fit_leaf_gp(model: LeafGP, maxiter: int = FIT_MAXITER) -> LeafGP:
    """Fit ``model``'s hyper-parameters in place; returns it in eval mode.

    Args:
        model: A [`LeafGP`][treebo.jenatton.model.LeafGP]
            ([`JenattonTreeGP`][treebo.jenatton.model.JenattonTreeGP],
            [`IndependentLeafGP`][treebo.jenatton.model.IndependentLeafGP]).
        maxiter: L-BFGS iterations.

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
    optimizer = torch.optim.LBFGS(
        parameters, max_iter=maxiter, line_search_fn="strong_wolfe"
    )
    n = float(model.leaf_valid.sum())

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = -(model.marginal_log_likelihood() + model.log_prior()) / n
        loss.backward()
        return loss

    start = [p.detach().clone() for p in parameters]
    try:
        optimizer.step(closure)
    except torch.linalg.LinAlgError:  # a step made a factor singular: keep start
        with torch.no_grad():
            for p, value in zip(parameters, start, strict=True):
                p.copy_(value)
    if not all(bool(p.isfinite().all()) for p in parameters):
        raise RuntimeError("the fit of the leaf GPs ended at non-finite values")
    return model.eval()
