"""The Gibbs sampler: seeding, the slice sampler's target, and recovery of a
rank-2 tensor with its noise level."""

from __future__ import annotations

import math

import pytest
import torch

from treebo.bktf.conditionals import BKTFData
from treebo.bktf.grid import Grid
from treebo.bktf.sampler import run_gibbs, slice_sample_box


def small_data(seed: int = 0) -> BKTFData:
    gen = torch.Generator().manual_seed(seed)
    grid = Grid([torch.linspace(0, 1, s, dtype=torch.float64) for s in (6, 5, 4)])
    index = torch.stack(
        [torch.randint(0, s, (12,), generator=gen) for s in grid.sizes], -1
    )
    return BKTFData(grid, index, torch.randn(12, generator=gen, dtype=torch.float64))


def test_same_seed_same_samples_and_global_generator_untouched():
    data = small_data()
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a = run_gibbs(data, rank=2, num_sweeps=15, burn_in=5, chains=2, seed=7)
    assert torch.equal(torch.random.get_rng_state(), before)
    b = run_gibbs(data, rank=2, num_sweeps=15, burn_in=5, chains=2, seed=7)
    c = run_gibbs(data, rank=2, num_sweeps=15, burn_in=5, chains=2, seed=8)
    for x, y in zip(a.factors, b.factors, strict=True):
        assert torch.equal(x, y)
    assert torch.equal(a.precision, b.precision)
    assert not torch.equal(a.weights, c.weights)
    assert a.num_samples == 2 * 10


def test_slice_sampler_draws_from_its_target():
    """A correlated 2-D Gaussian, 4000 chains of 30 updates each."""
    torch.manual_seed(0)
    cov = torch.tensor([[1.0, 0.8], [0.8, 2.0]], dtype=torch.float64)
    prec = torch.linalg.inv(cov)
    mean = torch.tensor([1.0, -2.0], dtype=torch.float64)

    def log_density(x):
        z = x - mean
        return -0.5 * ((z @ prec) * z).sum(-1)

    x = torch.zeros(4000, 2, dtype=torch.float64)
    for _ in range(30):
        x = slice_sample_box(log_density, x, log_density(x), width=3.0)
    torch.testing.assert_close(x.mean(0), mean, atol=0.08, rtol=0)
    torch.testing.assert_close(torch.cov(x.T), cov, atol=0.12, rtol=0)


def test_recovers_a_rank_two_tensor_and_covers_the_noise_precision():
    gen = torch.Generator().manual_seed(1)
    sizes = (8, 6, 5)
    grid = Grid([torch.linspace(0, 1, s, dtype=torch.float64) for s in sizes])
    u = [grid.unit_values(d) for d in range(3)]
    factors = [
        torch.stack([torch.sin(3 * u[0] + 0.5), torch.cos(2 * u[0])]),
        torch.stack([1 + u[1], torch.sin(4 * u[1])]),
        torch.stack([torch.cos(3 * u[2]), 0.5 + u[2] ** 2]),
    ]
    weights = torch.tensor([1.5, -1.0], dtype=torch.float64)
    truth = torch.einsum("r,ri,rj,rk->ijk", weights, *factors)
    n, noise_sd = 90, 0.05
    flat = torch.randperm(grid.numel, generator=gen)[:n]
    index = grid.unflatten(flat)
    y = truth.flatten()[flat] + noise_sd * torch.randn(
        n, generator=gen, dtype=torch.float64
    )
    samples = run_gibbs(
        BKTFData(grid, index, y), rank=2, num_sweeps=200, burn_in=100, seed=0
    )
    every = grid.unflatten(torch.arange(grid.numel))
    estimate = samples.values(every).mean(0)
    error = (estimate - truth.flatten()).norm() / truth.norm()
    assert error < 0.05
    low, high = samples.precision.quantile(
        torch.tensor([0.005, 0.995], dtype=torch.float64)
    )
    assert low <= 1 / noise_sd**2 <= high


def test_refuses_bad_counts():
    data = small_data()
    with pytest.raises(ValueError, match="burn_in"):
        run_gibbs(data, rank=2, num_sweeps=5, burn_in=5)
    with pytest.raises(ValueError, match="rank"):
        run_gibbs(data, rank=0, num_sweeps=5, burn_in=1)
    assert math.isfinite(float(run_gibbs(data, 1, 3, 0).precision.sum()))
