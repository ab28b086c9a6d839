import copy
import math

import pytest
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.optim.fit import fit_gpytorch_mll_scipy
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo.treed import TreedGP, WeightedPseudoLikelihood
from treebo.treed import fit as treed_fit
from treebo.treed.fit import (
    PROFILED_PRIORS,
    START_LENGTHSCALES,
    START_LOG_RATIOS,
    fit_treed_gp,
    profiled_pseudo_log_likelihood,
    start_from_grid,
)


def _data(n=40, seed=0, noise=0.0):
    gen = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 2, generator=gen, dtype=torch.float64)
    Y = torch.where(X[:, :1] < 0.5, torch.sin(12 * X[:, 1:]), 0.3 * X[:, 1:])
    return X, Y + noise * torch.randn(n, 1, generator=gen, dtype=torch.float64)


def _model(warp=False, **kwargs):
    X, Y = _data(**kwargs)
    model = TreedGP(X, Y, warp=warp)
    assert model.num_leaves > 1
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():  # every leaf its own lengthscales
        matern = model.covar_module.base_kernel.base_kernel
        matern.lengthscale = (
            torch.rand(model.num_leaves, 1, 2, generator=gen, dtype=torch.float64) + 0.1
        )
    return model


def _objective_with_priors(model):
    """The full objective (pseudo-likelihood + all log priors), not divided by n."""
    mll = WeightedPseudoLikelihood(model).train()
    return mll() * model.train_targets.shape[-1]


def _write(model, log_ratio):
    """Write the profiled mean, output scale and noise into the model."""
    with torch.no_grad():
        _, mean, log_scale = profiled_pseudo_log_likelihood(model, log_ratio)
        model.mean_constant.copy_(mean)
        model.covar_module.base_kernel.outputscale = log_scale.exp()
        # the floor is stored in the default dtype: keep to its round-off
        floor = model.likelihood.noise_covar.raw_noise_constraint.lower_bound
        noise = (log_ratio + log_scale).exp().unsqueeze(-1)
        model.likelihood.noise = noise.clamp_min(floor.to(noise))


def _other_priors(model):
    return sum(
        prior.log_prob(closure(module)).sum()
        for name, module, prior, closure, _ in model.named_priors()
        if name not in PROFILED_PRIORS
    )


def test_profiled_value_is_the_full_objective_at_the_profiled_mean_and_scale():
    for warp in (False, True):
        model = _model(warp=warp, noise=0.05)
        log_ratio = torch.linspace(-3.0, -1.0, model.num_leaves, dtype=torch.float64)
        value, _, _ = profiled_pseudo_log_likelihood(model, log_ratio)
        _write(model, log_ratio)
        full = _objective_with_priors(model)
        assert torch.allclose(value + _other_priors(model), full.detach())


def test_profiled_mean_and_scale_maximize_the_full_objective():
    # For fixed lengthscales and noise-to-signal ratios: the mean is a
    # stationary point, and scaling output scale and noise together lowers
    # the objective in both directions.
    model = _model(noise=0.05)
    log_ratio = torch.linspace(-3.0, -1.0, model.num_leaves, dtype=torch.float64)
    _write(model, log_ratio)
    full = _objective_with_priors(model)
    grad = torch.autograd.grad(full, model.mean_constant)[0]
    assert grad.abs().max() < 1e-8
    scale = model.covar_module.base_kernel
    outputscale, noise = scale.outputscale.detach(), model.likelihood.noise.detach()
    with torch.no_grad():
        for leaf in range(model.num_leaves):
            values = []
            for factor in (0.999, 1.001):
                shifted = copy.deepcopy(model)
                shifted.covar_module.base_kernel.outputscale = outputscale.index_fill(
                    0, torch.tensor([leaf]), outputscale[leaf] * factor
                )
                shifted.likelihood.noise = noise.index_fill(
                    0, torch.tensor([leaf]), noise[leaf, 0] * factor
                )
                values.append(_objective_with_priors(shifted))
                shifted.mean_constant[leaf] += 0.001
                assert _objective_with_priors(shifted) < values[-1]
            assert max(values) < full
            # Central difference of a maximum: second order only.
            assert abs(values[1] - values[0]) < 0.02 * (full - min(values))


@pytest.mark.parametrize("noise_floor", [1e-6, 0.05])
def test_gradients_of_the_profiled_objective_match_finite_differences(noise_floor):
    # With a high floor the noise bound binds and the scale follows the ratio.
    X, Y = _data(noise=0.0)
    model = TreedGP(X, Y, noise_floor=noise_floor)
    log_ratio = torch.full((model.num_leaves,), -4.0, dtype=torch.float64)
    log_ratio.requires_grad_(True)
    raw = model.covar_module.base_kernel.base_kernel.raw_lengthscale

    def value():
        return profiled_pseudo_log_likelihood(model, log_ratio)[0]

    grads = torch.autograd.grad(value(), [log_ratio, raw])
    eps = 1e-6
    for tensor, grad in zip((log_ratio, raw), grads, strict=True):
        flat = tensor.data.view(-1)
        for i in range(flat.numel()):
            flat[i] += eps
            with torch.no_grad():
                up = value()
            flat[i] -= 2 * eps
            with torch.no_grad():
                down = value()
            flat[i] += eps
            numeric = (up - down) / (2 * eps)
            assert math.isclose(grad.view(-1)[i], numeric, rel_tol=1e-4, abs_tol=1e-5)
    if noise_floor == 0.05:  # the floor binds on some leaves
        _write(model, log_ratio.detach())
        noise = model.likelihood.noise.squeeze(-1)
        assert bool((noise >= 0.05 * (1 - 1e-12)).all())
        assert bool(torch.isclose(noise, torch.full_like(noise, 0.05)).any())


@pytest.mark.full_optimizers  # checks what the optimizer finds
def test_fit_reaches_the_optimum_of_the_joint_fit_in_fewer_iterations():
    X, Y = _data(n=40, seed=1, noise=0.05)
    model = TreedGP(X, Y)
    assert model.num_leaves > 2
    joint = copy.deepcopy(model)
    mll = WeightedPseudoLikelihood(joint).train()
    joint_result = fit_gpytorch_mll_scipy(mll, options={"maxiter": 2000})
    result = fit_treed_gp(model, maxiter=2000)
    assert not model.training
    assert result.step < joint_result.step
    with torch.no_grad():
        ours, theirs = _objective_with_priors(model), _objective_with_priors(joint)
    assert float(ours) > float(theirs) - 1e-4
    floor = model.likelihood.noise_covar.raw_noise_constraint.lower_bound
    assert bool((model.likelihood.noise >= floor).all())


def test_fit_gpytorch_mll_dispatches_to_the_profiled_fit():
    model = _model(noise=0.05)
    direct = copy.deepcopy(model)
    fit_treed_gp(direct, maxiter=20)
    mll = fit_gpytorch_mll(
        WeightedPseudoLikelihood(model), optimizer_kwargs={"options": {"maxiter": 20}}
    )
    assert not mll.training
    for a, b in zip(model.parameters(), direct.parameters(), strict=True):
        assert torch.equal(a, b)
    with pytest.raises(TypeError, match="WeightedPseudoLikelihood"):
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    with pytest.raises(ValueError, match="maxiter"):
        fit_treed_gp(model, maxiter=0)


@pytest.mark.parametrize("entries_per_pass", [1, 2**21])  # one pass per candidate
def test_grid_start_picks_each_leafs_best_candidate(monkeypatch, entries_per_pass):
    monkeypatch.setattr(treed_fit, "START_BATCH_ENTRIES", entries_per_pass)
    model = _model(warp=True, noise=0.05)
    matern = model.covar_module.base_kernel.base_kernel
    current = matern.lengthscale.detach().clone()
    L = model.num_leaves
    log_ratio = torch.linspace(-8.0, -2.0, L, dtype=torch.float64)

    def total(lengthscale, ratio):
        """The profiled objective plus the lengthscales' log prior."""
        with torch.no_grad():
            matern.lengthscale = lengthscale
            value = profiled_pseudo_log_likelihood(model, ratio)[0]
            return float(value + matern.lengthscale_prior.log_prob(lengthscale).sum())

    # Brute force: vary one leaf over the candidates, the others at their
    # current values (the objective is a sum of one term per leaf).
    candidates = [(ls, r) for ls in START_LENGTHSCALES for r in START_LOG_RATIOS]
    expected_ls, expected_ratio = current.clone(), log_ratio.clone()
    for leaf in range(L):
        best = (total(current, log_ratio), current[leaf], log_ratio[leaf])
        for ls, r in candidates:
            lengthscale, ratio = current.clone(), log_ratio.clone()
            lengthscale[leaf], ratio[leaf] = ls, r
            value = total(lengthscale, ratio)
            if value > best[0]:
                best = (value, lengthscale[leaf], ratio[leaf])
        expected_ls[leaf], expected_ratio[leaf] = best[1], best[2]
    with torch.no_grad():
        matern.lengthscale = current
    start = start_from_grid(model, log_ratio)
    assert torch.allclose(matern.lengthscale, expected_ls)
    assert torch.allclose(start, expected_ratio)
    assert not torch.equal(start, log_ratio)  # the grid moved some leaf
    assert total(expected_ls, start) >= total(current, log_ratio)
