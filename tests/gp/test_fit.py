"""fit_model: marginal vs leave-one-out likelihood, and the noise-floor likelihood."""

from __future__ import annotations

import math

import pytest
import torch
from gpytorch.mlls import ExactMarginalLogLikelihood, LeaveOneOutPseudoLikelihood

from treebo.add_tree import AddTreeGP
from treebo.gp import fit_model, noise_floor_likelihood
from treebo.gp.exact_mll import CholeskyMarginalLogLikelihood
from treebo.gp.fit import loo_log_predictive
from treebo.test_functions import Jenatton


def jenatton_model(n: int, seed: int = 0) -> AddTreeGP:
    problem = Jenatton()
    X = problem.space.sample(n, seed=seed, by="choice")
    return AddTreeGP(
        X,
        problem(X).unsqueeze(-1),
        problem.space.to_hierarchical_dependencies(),
        bounds=problem.space.bounds,
        share_lengthscales="all",
        share_outputscales="all",
        likelihood=noise_floor_likelihood(1e-6),
    )


def objective_values(model: AddTreeGP) -> tuple[float, float]:
    """(marginal, leave-one-out) log likelihood of the model's current state."""
    model.train()
    X, y = model.train_inputs[0], model.train_targets
    with torch.no_grad():
        out = model(X)
        mll = ExactMarginalLogLikelihood(model.likelihood, model)(out, y)
        loo = LeaveOneOutPseudoLikelihood(model.likelihood, model)(out, y)
    model.eval()
    return float(mll), float(loo)


def brute_force_loo(model: AddTreeGP) -> float:
    """Mean of log N(y_i; mu_-i, s2_-i) with one GP conditioned per left-out point."""
    model.train()
    X, y = model.transform_inputs(model.train_inputs[0]), model.train_targets
    with torch.no_grad():
        K = model.covar_module(X).to_dense() + model.likelihood.noise * torch.eye(
            y.shape[-1], dtype=y.dtype
        )
        m = model.mean_module(X)
        total = 0.0
        for i in range(y.shape[-1]):
            rest = torch.arange(y.shape[-1]) != i
            K_rr = K[rest][:, rest]
            k_ir = K[i, rest]
            w = torch.linalg.solve(K_rr, k_ir)
            mu = m[i] + w @ (y[rest] - m[rest])
            s2 = K[i, i] - k_ir @ w
            total += float(
                -0.5 * torch.log(2 * math.pi * s2) - (y[i] - mu) ** 2 / (2 * s2)
            )
    model.eval()
    return total / y.shape[-1]


def test_each_objective_is_maximized():
    by_mll = fit_model(jenatton_model(16))
    by_loo = fit_model(jenatton_model(16), LeaveOneOutPseudoLikelihood)
    mll_a, loo_a = objective_values(by_mll)
    mll_b, loo_b = objective_values(by_loo)
    # Priors are part of both objectives; the ordering must still hold clearly.
    assert mll_a > mll_b
    assert loo_b > loo_a


def test_loo_objective_is_the_leave_one_out_predictive_likelihood():
    model = fit_model(jenatton_model(12), LeaveOneOutPseudoLikelihood)
    # The closed form used by the fit equals refitting without each point
    # (gpytorch adds the prior log densities, so compare without priors).
    model.train()
    X, y = model.train_inputs[0], model.train_targets
    with torch.no_grad():
        out = model.likelihood(model(X))
        L = torch.linalg.cholesky(out.covariance_matrix)
        eye = torch.eye(y.shape[-1], dtype=y.dtype)
        inv = torch.cholesky_solve(eye, L)
        s2 = 1 / inv.diagonal()
        mu = y - (inv @ (y - out.mean)) * s2
        closed = float(
            (-0.5 * torch.log(2 * math.pi * s2) - (y - mu) ** 2 / (2 * s2)).mean()
        )
    model.eval()
    assert closed == pytest.approx(brute_force_loo(model), rel=1e-8)


@pytest.mark.parametrize("mll_class", [None, LeaveOneOutPseudoLikelihood])
def test_loo_log_predictive_equals_refitting_without_each_point(mll_class):
    objective = {} if mll_class is None else {"mll_class": mll_class}
    model = fit_model(jenatton_model(14, seed=2), **objective)
    score = float(loo_log_predictive(model))
    assert score == pytest.approx(brute_force_loo(model), rel=1e-8)
    assert not model.training  # the score leaves the model in eval mode


@pytest.mark.full_optimizers  # checks what the optimizer finds
def test_loo_fits_noise_free_additive_data_better():
    # P3 in miniature: 24 noise-free Jenatton points, 50 test points.
    problem = Jenatton()
    Xt = problem.space.sample(50, seed=99, by="choice")
    Yt = problem(Xt)
    errors = {}
    objectives = {
        "mll": CholeskyMarginalLogLikelihood,
        "loo": LeaveOneOutPseudoLikelihood,
    }
    for criterion, mll_class in objectives.items():
        model = fit_model(jenatton_model(24, seed=3), mll_class)
        with torch.no_grad():
            pred = model.posterior(Xt).mean.squeeze(-1)
        errors[criterion] = float((pred - Yt).pow(2).mean())
    assert errors["loo"] < 1e-3 < errors["mll"]


def test_noise_floor_is_respected_and_bad_arguments_are_named():
    model = fit_model(jenatton_model(20), LeaveOneOutPseudoLikelihood)
    # The floor is stored in the default dtype (float32 round-off of 1e-6).
    assert model.likelihood.noise.detach().item() >= 1e-6 * (1 - 1e-7)
    with pytest.raises(TypeError, match="mll_class must be a MarginalLogLikelihood"):
        fit_model(jenatton_model(5), "loo")
    with pytest.raises(ValueError, match="noise_floor"):
        noise_floor_likelihood(0.0)
