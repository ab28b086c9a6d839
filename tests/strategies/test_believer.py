"""The kriging believer: pending points at the model's mean, same hyper-parameters."""

from __future__ import annotations

import pytest
import torch

from treebo import TreeOptimizer
from treebo.strategies.believer import believe_pending
from treebo.test_functions import Jenatton


@pytest.mark.parametrize("noise", ["deterministic", "infer"])
def test_the_believer_keeps_the_mean_and_removes_the_variance_at_pending_points(noise):
    problem = Jenatton("paper")
    opt = TreeOptimizer(problem.space, seed=0, noise=noise)
    for params in [opt.ask() for _ in range(opt.n_initial + 2)]:
        opt.tell(params, problem.objective(params))
    obs = opt.observations()
    strategy = opt.strategy
    model = strategy.fit(obs)
    Xp = problem.space.sample(3, seed=4)

    rebuild = strategy.model_fit.rebuild(obs)
    believer, X_aug, y_aug = believe_pending(model, obs.X, obs.y, Xp, rebuild)
    n = obs.X.shape[0]
    assert torch.equal(X_aug[:n], obs.X) and torch.equal(X_aug[n:], Xp)
    mean, var = model.posterior_mean_variance(Xp)
    b_mean, b_var = believer.posterior_mean_variance(Xp)
    torch.testing.assert_close(y_aug[n:, 0], mean.detach())
    torch.testing.assert_close(b_mean, mean, atol=1e-3 * obs.y.std(), rtol=0)
    # A believed point is an observation: its variance drops to about the noise.
    bound = max(1e-4, 1.5 * float(model.likelihood.noise.detach()))
    assert (b_var <= var).all() and (b_var < bound * obs.y.var()).all()
    # Same hyper-parameters: nothing was refitted.
    raw = {k: v for k, v in model.state_dict().items() if "raw_" in k}
    for name, value in believer.state_dict().items():
        if name in raw:
            assert torch.equal(value, raw[name]), name
