"""CholeskyMarginalLogLikelihood: GPyTorch's values and gradients, computed faster."""

from __future__ import annotations

import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch import settings
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo.add_tree import AddTreeGP
from treebo.gp import noise_floor_likelihood
from treebo.gp.exact_mll import CholeskyMarginalLogLikelihood, gaussian_log_density
from treebo.test_functions import Jenatton


def value_and_gradients(mll_class, model) -> tuple[torch.Tensor, list[torch.Tensor]]:
    model.train()
    model.zero_grad()
    mll = mll_class(model.likelihood, model)
    X = model.train_inputs[0]
    value = mll(model(X), model.train_targets).sum()
    value.backward()
    grads = [
        p.grad.clone() for p in model.parameters() if p.grad is not None
    ]  # same order for both
    return value.detach(), grads


def add_tree_model(n: int, batch: int | None = None, yvar: bool = False) -> AddTreeGP:
    problem = Jenatton()
    X = problem.space.sample(n, seed=3)
    Y = problem(X).unsqueeze(-1)
    if batch is not None:
        X, Y = (
            X.expand(batch, *X.shape),
            Y.expand(batch, *Y.shape)
            * torch.arange(1.0, batch + 1, dtype=Y.dtype).view(-1, 1, 1),
        )
    kwargs = (
        {"train_Yvar": torch.full_like(Y, 1e-3)}
        if yvar
        else {"likelihood": noise_floor_likelihood(1e-4)}
    )
    return AddTreeGP(
        X,
        Y,
        problem.space.to_hierarchical_dependencies(),
        bounds=problem.space.bounds,
        **kwargs,
    )


@pytest.mark.parametrize(
    "build",
    [
        lambda: add_tree_model(40),
        lambda: add_tree_model(30, batch=3),
        lambda: add_tree_model(25, yvar=True),
        lambda: SingleTaskGP(
            torch.rand(30, 3, dtype=torch.float64),
            torch.rand(30, 1, dtype=torch.float64),
        ),
    ],
    ids=["add_tree", "batched", "known_noise", "single_task"],
)
def test_matches_gpytorch_value_and_gradients(build) -> None:
    torch.manual_seed(0)
    model = build()
    with torch.no_grad():  # away from the initial values, so gradients differ
        for name, p in model.named_parameters():
            if "noise" not in name:  # BoTorch's raw noise is the noise itself
                p.add_(0.3 * torch.randn_like(p))
    reference, ref_grads = value_and_gradients(ExactMarginalLogLikelihood, model)
    value, grads = value_and_gradients(CholeskyMarginalLogLikelihood, model)
    assert torch.allclose(value, reference, rtol=1e-10, atol=1e-10)
    assert len(grads) == len(ref_grads) > 0
    for g, r in zip(grads, ref_grads, strict=True):
        assert torch.allclose(g, r, rtol=1e-8, atol=1e-10)


def test_log_density_gradients_against_finite_differences() -> None:
    torch.manual_seed(1)
    A = torch.randn(2, 5, 5, dtype=torch.float64)
    K = (
        A @ A.transpose(-1, -2) + 5 * torch.eye(5, dtype=torch.float64)
    ).requires_grad_()
    r = torch.randn(5, dtype=torch.float64, requires_grad=True)  # broadcast over K
    # The factorization reads one triangle: check the symmetric part's gradient.
    assert torch.autograd.gradcheck(
        lambda r, K: gaussian_log_density(r, 0.5 * (K + K.transpose(-1, -2))), (r, K)
    )


def test_nan_policy_mask_falls_back_to_gpytorch() -> None:
    model = add_tree_model(20)
    model.train()
    Y = model.train_targets.clone()
    Y[3] = float("nan")
    out = model(model.train_inputs[0])
    with settings.observation_nan_policy("mask"):
        value = CholeskyMarginalLogLikelihood(model.likelihood, model)(out, Y)
        reference = ExactMarginalLogLikelihood(model.likelihood, model)(out, Y)
    assert torch.isfinite(value) and torch.isclose(value, reference)
