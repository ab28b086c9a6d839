"""BKTF as a BoTorch model: posterior shapes and values, scaling, refusals."""

from __future__ import annotations

import pytest
import torch
from botorch.posteriors.ensemble import EnsemblePosterior

from treebo.bktf.grid import Grid
from treebo.bktf.model import BKTF


def fitted_model(scale: float = 1.0, shift: float = 0.0):
    grid = Grid([torch.linspace(0, 1, 7, dtype=torch.float64)] * 2)
    index = torch.tensor([[0, 0], [6, 3], [2, 5], [4, 1], [3, 3], [1, 6]])
    X = grid.points(index)
    y = torch.sin(3 * X[:, :1]) * torch.cos(2 * X[:, 1:])
    model = BKTF(X, scale * y + shift, grid, rank=2)
    model.fit(num_sweeps=60, burn_in=30, seed=0)
    return grid, model, X, y


def test_posterior_is_the_sample_ensemble_in_batch_shapes():
    grid, model, X, _ = fitted_model()
    Q = grid.points(torch.tensor([[[1, 2], [5, 5], [0, 6]], [[2, 2], [3, 4], [6, 0]]]))
    post = model.posterior(Q)
    assert isinstance(post, EnsemblePosterior)
    K = model.fitted_samples.num_samples
    assert post.values.shape == (2, K, 3, 1)
    values = model.sample_values(Q)  # K x 2 x 3
    torch.testing.assert_close(post.mean.squeeze(-1), values.mean(0))
    torch.testing.assert_close(post.variance.squeeze(-1), values.var(0))
    assert model.posterior(Q[0]).mean.shape == (3, 1)
    levels = torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64)
    torch.testing.assert_close(
        post.quantile(levels).squeeze(-1), values.quantile(levels, dim=0)
    )


def test_outcome_scale_is_equivariant():
    """The sampler sees standardized outcomes: c * y + b gives c * f + b."""
    grid, a, X, _ = fitted_model()
    _, b, _, _ = fitted_model(scale=10.0, shift=-3.0)
    Q = grid.points(torch.tensor([[1, 1], [5, 2]]))
    torch.testing.assert_close(
        b.posterior(Q).mean, 10.0 * a.posterior(Q).mean - 3.0, rtol=1e-8, atol=1e-8
    )


def test_observation_noise_adds_the_sampled_noise():
    grid, model, X, _ = fitted_model()
    torch.manual_seed(0)
    plain = model.posterior(X).variance
    noisy = model.posterior(X, observation_noise=True).variance
    assert bool((noisy >= plain).all())


def test_refusals():
    grid = Grid([torch.linspace(0, 1, 5, dtype=torch.float64)] * 2)
    X = grid.points(torch.tensor([[0, 0], [4, 4]]))
    y = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match="off the grid"):
        BKTF(X + 0.01, y, grid)
    with pytest.raises(ValueError, match="n x 1"):
        BKTF(X, y.squeeze(-1), grid)
    with pytest.raises(ValueError, match="not finite"):
        BKTF(X, y * float("nan"), grid)
    with pytest.raises(ValueError, match="rank"):
        BKTF(X, y, grid, rank=0)
    model = BKTF(X, y, grid)
    with pytest.raises(RuntimeError, match="call fit"):
        model.posterior(X)
    model.fit(num_sweeps=5, burn_in=2)
    with pytest.raises(ValueError, match="nearest grid value"):
        model.posterior(X[:1] + 0.1)
