r"""Acquisition maximization on a dense Sobol set, then gradient polishing.

Paper 003 maximizes EI over a 20,000-point Sobol grid (as Spearmint does): a treed
model's acquisition is discontinuous at leaf boundaries and often has many narrow peaks,
which a dense space-filling set finds more reliably than a few gradient starts.
[`optimize_acqf_sobol()`][treebo.optim.sobol.optimize_acqf_sobol] scores such a set in
batches (no gradients), then polishes the best ``num_polish`` points at once with
BoTorch's batched L-BFGS-B (``gen_candidates_scipy``) inside the bounds, and returns the
best point seen by either stage.

Cost: ``num_points`` acquisition evaluations plus one batched L-BFGS-B run of
``num_polish`` starts.

Example:
    >>> import torch
    >>> from botorch.acquisition import PosteriorMean
    >>> from botorch.models import SingleTaskGP
    >>> X = torch.rand(10, 2, dtype=torch.float64)
    >>> model = SingleTaskGP(X, -(X - 0.3).square().sum(-1, keepdim=True))
    >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    >>> x, value = optimize_acqf_sobol(PosteriorMean(model), bounds, seed=0)
    >>> x.shape
    torch.Size([1, 2])
"""

from __future__ import annotations

import warnings

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.generation.gen import gen_candidates_scipy
from torch import Tensor
from torch.quasirandom import SobolEngine


def optimize_acqf_sobol(
    acq_function: AcquisitionFunction,
    bounds: Tensor,
    num_points: int = 20_000,
    num_polish: int = 5,
    batch_size: int = 2_048,
    seed: int | None = None,
    maxiter: int = 25,
) -> tuple[Tensor, Tensor]:
    r"""Maximize ``acq_function`` over a Sobol set, then polish the best.

    Args:
        acq_function: A ``q = 1`` acquisition (inputs ``b x 1 x d``).
        bounds: ``2 x d`` lower and upper bounds.
        num_points: Size of the scrambled Sobol set.
        num_polish: How many of its best points L-BFGS-B refines (0: none).
        batch_size: Points scored per acquisition call.
        seed: Seed of the Sobol scrambling.
        maxiter: L-BFGS-B iterations of the polishing.

    Returns:
        ``(candidate, value)``: the ``1 x d`` maximizer and its acquisition
        value (0-dimensional).
    """
    if num_points < 1 or num_polish < 0 or batch_size < 1:
        raise ValueError(
            "num_points and batch_size must be >= 1 and num_polish >= 0, got "
            f"{num_points}, {batch_size} and {num_polish}."
        )
    lower, upper = bounds[0], bounds[1]
    d = bounds.shape[-1]
    engine = SobolEngine(d, scramble=True, seed=seed)
    unit = engine.draw(num_points, dtype=bounds.dtype).to(bounds.device)
    points = (lower + (upper - lower) * unit).unsqueeze(-2)  # N x 1 x d
    with torch.no_grad():
        values = torch.cat([acq_function(chunk) for chunk in points.split(batch_size)])
    best = values.argmax()
    candidate, value = points[best], values[best]
    if num_polish:
        starts = points[values.topk(min(num_polish, num_points)).indices]
        # L-BFGS-B stops "abnormally" at the kinks of a treed model's
        # acquisition (leaf boundaries); BoTorch warns for it whatever the
        # filters, so the warnings are recorded and dropped.
        with warnings.catch_warnings(record=True):
            polished, polished_values = gen_candidates_scipy(
                starts,
                acq_function,
                lower_bounds=lower,
                upper_bounds=upper,
                options={"maxiter": maxiter},
            )
        top = polished_values.argmax()
        if bool(polished_values[top] > value):
            candidate, value = polished[top].detach(), polished_values[top].detach()
    return candidate, value
