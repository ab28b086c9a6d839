"""Expected improvement for a strategy's proposal, pending points included.

Example:
    >>> import torch
    >>> from botorch.models import SingleTaskGP
    >>> X = torch.rand(6, 2, dtype=torch.float64)
    >>> model = SingleTaskGP(X, X.sum(-1, keepdim=True))
    >>> type(log_ei(model, torch.tensor(1.0), X[:0], seed=0)).__name__
    'LogExpectedImprovement'
    >>> type(log_ei(model, torch.tensor(1.0), X[:2], seed=0)).__name__
    'qLogExpectedImprovement'
"""

from __future__ import annotations

import torch
from botorch.acquisition import (
    AcquisitionFunction,
    LogExpectedImprovement,
    qLogExpectedImprovement,
)
from botorch.models.model import Model
from botorch.sampling import SobolQMCNormalSampler
from torch import Tensor

#: Quasi-Monte Carlo samples of qLogEI over pending points.
PENDING_MC_SAMPLES = 128


def log_ei(
    model: Model, best_f: Tensor, X_pending: Tensor, seed: int
) -> AcquisitionFunction:
    """LogEI over ``best_f``; with ``p > 0`` pending configurations
    (``X_pending``, ``p x d``), Monte Carlo qLogEI over them (the model's
    joint posterior, ``PENDING_MC_SAMPLES`` Sobol samples seeded by ``seed``)."""
    if not X_pending.shape[0]:
        return LogExpectedImprovement(model, best_f=best_f)
    return qLogExpectedImprovement(
        model,
        best_f=best_f,
        sampler=SobolQMCNormalSampler(torch.Size([PENDING_MC_SAMPLES]), seed=seed),
        X_pending=X_pending,
    )
