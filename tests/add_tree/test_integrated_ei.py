"""LogEI integrated over Laplace draws of the hyper-parameters."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition import LogExpectedImprovement

from treebo import TreeOptimizer
from treebo.add_tree import AddTreeStrategy, IntegratedLogEISearch, LogEISearch
from treebo.add_tree.integrated_ei import (
    CHUNK_ENTRIES,
    EnsembleLogEI,
    laplace_draws,
    log_posterior_gradients,
    raw_hyperparameters,
    stacked_with,
)
from treebo.gp.exact_mll import CholeskyMarginalLogLikelihood
from treebo.test_functions import Jenatton

PROBLEM = Jenatton()


@pytest.fixture(scope="module")
def fitted():
    opt = TreeOptimizer(PROBLEM.space, seed=0)
    for params in PROBLEM.space.to_dicts(PROBLEM.space.sample(10, seed=1)):
        opt.tell(params, PROBLEM.objective(params))
    obs = opt.observations()
    return opt.strategy.fit(obs), obs.y


def own_gradient(model):
    params = [p for p in model.parameters() if p.requires_grad]
    mll = CholeskyMarginalLogLikelihood(model.likelihood, model)
    model.train()
    try:
        inputs = [model.transform_inputs(X=x) for x in model.train_inputs]
        value = mll(model(*model.train_inputs), model.train_targets, *inputs)
        grads = torch.autograd.grad(value * model.train_targets.shape[-1], params)
    finally:
        model.eval()
    return torch.cat([g.reshape(-1) for g in grads])


def test_batched_gradients_are_each_members_own(fitted, monkeypatch):
    model, _ = fitted
    theta = raw_hyperparameters(model)
    other = theta + 0.1 * torch.randn(
        theta.shape, generator=torch.Generator().manual_seed(0), dtype=theta.dtype
    )
    batched = log_posterior_gradients(model, torch.stack([theta, other]))
    torch.testing.assert_close(batched[0], own_gradient(model))
    # Chunked (one member per evaluation) gives the same.
    n = model.train_targets.shape[-1]
    monkeypatch.setattr("treebo.add_tree.integrated_ei.CHUNK_ENTRIES", n * n)
    chunked = log_posterior_gradients(model, torch.stack([theta, other]))
    torch.testing.assert_close(chunked, batched)
    assert CHUNK_ENTRIES >= n * n
    # The model is left as it was.
    assert torch.equal(raw_hyperparameters(model), theta) and not model.training


def test_draws_vary_around_the_map_fit_reproducibly(fitted):
    model, _ = fitted
    theta = raw_hyperparameters(model)
    draws = laplace_draws(model, 5, seed=3)
    assert draws.shape == (5, theta.numel())
    assert not (draws == theta).all(-1).any()
    torch.testing.assert_close(laplace_draws(model, 5, seed=3), draws)
    # Every raw parameter moves by at most a few standard deviations of at most 1.
    assert (draws - theta).abs().max() < 6.0


def test_over_identical_members_the_ensemble_is_logei(fitted):
    model, y = fitted
    theta = raw_hyperparameters(model)
    stacked = stacked_with(model, torch.stack([theta, theta, theta]))
    stacked.eval()
    X = PROBLEM.space.sample(6, seed=4).unsqueeze(-2)
    one = LogExpectedImprovement(model, best_f=y.max())(X)
    torch.testing.assert_close(EnsembleLogEI(stacked, y.max())(X), one)


def test_the_ensemble_is_the_log_mean_of_its_members_ei(fitted):
    model, y = fitted
    thetas = torch.cat([raw_hyperparameters(model)[None], laplace_draws(model, 2, 0)])
    stacked = stacked_with(model, thetas)
    stacked.eval()
    X = PROBLEM.space.sample(5, seed=5).unsqueeze(-2)
    each = []
    for theta in thetas:  # each member alone, as a model of its own
        alone = stacked_with(model, theta[None])
        alone.eval()
        each.append(LogExpectedImprovement(alone, best_f=y.max())(X[:, None]))
    expected = torch.logsumexp(torch.cat(each, -1), -1) - torch.log(torch.tensor(3.0))
    value = EnsembleLogEI(stacked, y.max())(X)
    torch.testing.assert_close(value, expected.to(value))
    # Differentiable in the points, as the optimizer needs.
    X = X.clone().requires_grad_(True)
    EnsembleLogEI(stacked, y.max())(X).sum().backward()
    assert X.grad is not None and X.grad.isfinite().all()


def test_the_default_search_integrates_and_members_one_is_logei(fitted):
    model, y = fitted
    assert isinstance(AddTreeStrategy().search, IntegratedLogEISearch)
    assert isinstance(IntegratedLogEISearch().acquisition(model, y), EnsembleLogEI)
    plain = IntegratedLogEISearch(members=1).acquisition(model, y)
    assert isinstance(plain, LogExpectedImprovement)
    with pytest.raises(ValueError, match="members"):
        IntegratedLogEISearch(members=0)
    # The plug-in search is a variant a checkpoint tells apart.
    assert "search" in AddTreeStrategy(search=LogEISearch()).variant()
    assert AddTreeStrategy().variant() is None
