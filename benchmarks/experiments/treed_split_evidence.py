"""Experiment: accept a treed-GP split only where the data support two GPs.

A stationary GP with the lengthscales of one GP fitted to all the data is
compared on each proposed split: the parent's data under one GP against the
children's data under one GP each, every GP with its own constant mean and
amplitude (profiled in closed form). The split is kept when the children's
profile log-likelihoods exceed the parent's by more than ``log |A|`` (a BIC
penalty for the two extra parameters). Boundary points count on the left
only.
"""

from __future__ import annotations

import math
import warnings

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo.treed.partition import padded_rows


def profile_loglik(kernel, nugget: float, X, y, masks, floor: float = 0.0):
    """Profile log-likelihood (mean and amplitude maximized, the amplitude at
    least ``floor``) of each set."""
    index, rows = padded_rows(masks)
    w = rows.to(X)
    K = kernel(X[index]).to_dense() * w.unsqueeze(-1) * w.unsqueeze(-2)
    K = K + torch.diag_embed(w * nugget + (1 - w))
    L = torch.linalg.cholesky(K)
    b = torch.stack([y[index] * w, w], dim=-1)  # m x 2: y and ones
    z = torch.cholesky_solve(b, L)
    yKy = (b[..., 0] * z[..., 0]).sum(-1)
    oKy = (b[..., 1] * z[..., 0]).sum(-1)
    oKo = (b[..., 1] * z[..., 1]).sum(-1).clamp(min=1e-300)
    m = w.sum(-1)
    rKr = (yKy - oKy.square() / oKo).clamp(min=1e-300)
    logdet = 2 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    return (
        -0.5 * m * torch.log(rKr / m)
        - 0.5 * logdet
        - 0.5 * m * (1 + math.log(2 * math.pi))
    )


def evidence_split_test(X, y, floor: float = 0.0):
    """A ``split_test`` for ``TreedGP`` from one GP fitted to ``X`` (unit
    cube), ``y`` (standardized)."""
    gp = SingleTaskGP(X, y.reshape(-1, 1), outcome_transform=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
    kernel = gp.covar_module
    nugget = float(gp.likelihood.noise.detach().max())
    y = y.reshape(-1)

    def test(parents, children):
        with torch.no_grad():
            left = children[:, 0]
            right = children[:, 1] & ~left
            ll = profile_loglik(
                kernel, nugget, X, y, torch.cat([parents, left, right]), floor
            ).reshape(3, -1)
            size = parents.sum(-1).to(X)
            return ll[1] + ll[2] - ll[0] > torch.log(size)

    return test
