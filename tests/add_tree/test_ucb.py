"""Add-Tree-GP-UCB acquisition and its tree-aware optimizers."""

from __future__ import annotations

import math

import pytest
import torch

from tests.add_tree.test_model import fitted_jenatton_model
from treebo.add_tree import AddTreeUCB, add_tree_beta


def test_beta_schedule_of_the_paper():
    beta = add_tree_beta(10, torch.tensor([0, 1, 3]))
    torch.testing.assert_close(
        beta, torch.tensor([0.2, 0.2, 0.6], dtype=torch.float64) * math.log(20)
    )
    with pytest.raises(ValueError, match="t must be"):
        add_tree_beta(0, torch.tensor([1]))


def test_forward_is_the_sum_of_vertex_ucbs_on_the_path():
    problem, model = fitted_jenatton_model()
    acqf = AddTreeUCB(model, beta=2.0)
    Z = problem.space.sample(7, seed=4)
    with torch.no_grad():
        vp = model.vertex_posterior(Z)
        expected = vp.offset + (
            (vp.mean + math.sqrt(2.0) * vp.variance.sqrt())
            * problem.space.tree.vertex_activity(Z)
        ).sum(-1)
        torch.testing.assert_close(acqf(Z.unsqueeze(-2)), expected)
    low = AddTreeUCB(model, beta=2.0, maximize=False)
    with torch.no_grad():
        vals = low.vertex_values(Z)
    torch.testing.assert_close(vals, -vp.mean + math.sqrt(2.0) * vp.variance.sqrt())


def test_log_ei_on_the_fast_posterior_equals_the_full_posterior():
    from botorch.acquisition import LogExpectedImprovement
    from botorch.models import SingleTaskGP

    problem, model = fitted_jenatton_model(n=16, seed=9)
    Z = problem.space.sample(9, seed=10).unsqueeze(-2).requires_grad_(True)
    fast = LogExpectedImprovement(model, best_f=0.3)

    def full(X):  # SingleTaskGP's own posterior on the same model
        return SingleTaskGP.posterior(model, X)

    a = fast(Z)
    with torch.no_grad():
        post = full(Z)
    fast_post = model.posterior(Z)
    torch.testing.assert_close(fast_post.mean, post.mean, atol=1e-9, rtol=1e-7)
    torch.testing.assert_close(fast_post.variance, post.variance, atol=1e-9, rtol=1e-6)
    (ga,) = torch.autograd.grad(a.sum(), Z)
    assert torch.isfinite(ga).all() and ga.abs().sum() > 0
