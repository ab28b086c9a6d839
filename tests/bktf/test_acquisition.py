"""The grid acquisition: chunked scores equal the unchunked ones, the moment
path equals the sample path, exclusions hold."""

from __future__ import annotations

import math

import pytest
import torch

from treebo.bktf.acquisition import (
    SampleEI,
    SampleQuantile,
    SampleUCB,
    grid_scores,
    maximize_over_grid,
)
from treebo.bktf.grid import Grid
from treebo.bktf.sampler import BKTFSamples


def random_samples(sizes=(5, 4, 3), K=7, R=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    grid = Grid([torch.arange(float(s)) for s in sizes])
    samples = BKTFSamples(
        [torch.randn(K, R, s, generator=gen, dtype=torch.float64) for s in sizes],
        torch.zeros(K, R, len(sizes), dtype=torch.float64),
        torch.randn(K, R, generator=gen, dtype=torch.float64),
        torch.ones(K, dtype=torch.float64),
    )
    return grid, samples


def dense_values(grid, samples):
    """Every sample at every grid point, K x |S|, by explicit CP sums."""
    every = grid.unflatten(torch.arange(grid.numel))
    out = torch.zeros(samples.num_samples, grid.numel, dtype=torch.float64)
    for r in range(samples.weights.shape[1]):
        term = samples.weights[:, r : r + 1].clone()
        for d, factor in enumerate(samples.factors):
            term = term * factor[:, r, every[:, d]]
        out += term
    return out


ACQUISITIONS = [SampleUCB(2.0), SampleUCB(0.0), SampleQuantile(0.8), SampleEI()]


@pytest.mark.parametrize("acquisition", ACQUISITIONS, ids=repr)
@pytest.mark.parametrize("max_elements", [1, 40, 300, 2**20])
def test_chunked_scores_equal_the_dense_ones(acquisition, max_elements):
    grid, samples = random_samples()
    expected = acquisition(dense_values(grid, samples), best=0.5)
    chunks = list(grid_scores(samples, grid, acquisition, 0.5, max_elements))
    starts = [start for start, _ in chunks]
    scores = torch.cat([s for _, s in chunks])
    assert starts[0] == 0 and scores.shape == (grid.numel,)
    torch.testing.assert_close(scores, expected)
    index, score = maximize_over_grid(
        samples, grid, acquisition, 0.5, None, max_elements
    )
    assert index == int(expected.argmax()) and score == pytest.approx(
        float(expected.max())
    )


def test_exclusions_and_exhausted_grid():
    grid, samples = random_samples()
    acq = SampleUCB()
    scores = acq(dense_values(grid, samples), 0.0)
    order = scores.argsort(descending=True)
    index, _ = maximize_over_grid(samples, grid, acq, 0.0, order[:5], max_elements=30)
    assert index == int(order[5])
    with pytest.raises(ValueError, match="every grid point is excluded"):
        maximize_over_grid(samples, grid, acq, 0.0, torch.arange(grid.numel))


def test_moment_scores_stay_accurate_for_a_tight_posterior():
    """Variance from E[F^2] - E[F]^2 must not cancel away a small spread."""
    grid, samples = random_samples(K=50)
    spread = [f[:1] + 1e-4 * (f - f[:1]) for f in samples.factors]
    tight = BKTFSamples(
        spread,
        samples.log_lengthscale,
        samples.weights[:1].expand(50, -1),
        samples.precision,
    )
    values = dense_values(grid, tight)
    expected = values.std(0)
    ((_, ucb),) = list(grid_scores(tight, grid, SampleUCB(1.0), 0.0))
    ((_, mean),) = list(grid_scores(tight, grid, SampleUCB(0.0), 0.0))
    torch.testing.assert_close(ucb - mean, expected, rtol=1e-4, atol=1e-9)


def test_options_are_checked():
    with pytest.raises(ValueError, match="beta"):
        SampleUCB(-1.0)
    with pytest.raises(ValueError, match="quantile"):
        SampleQuantile(0.0)
    grid, samples = random_samples()
    with pytest.raises(ValueError, match="max_elements"):
        list(grid_scores(samples, grid, SampleEI(), 0.0, 0))
    assert math.isfinite(maximize_over_grid(samples, grid, SampleEI(), 1e9)[1])
