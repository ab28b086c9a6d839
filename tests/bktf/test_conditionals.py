"""Each Gibbs conditional of BKTF against a dense computation of the same Gaussian
(or Gamma) on a tiny grid, through the full Kronecker-structured design."""

from __future__ import annotations

import math

import pytest
import torch

from treebo.bktf.conditionals import (
    KERNEL_JITTER,
    BKTFData,
    BKTFPrior,
    BKTFState,
    mode_log_marginal,
    precision_conditional,
    rank_products,
    sample_mode_factors,
    sample_weights,
    weight_conditional,
)
from treebo.bktf.grid import Grid

R = 2


def problem(categorical: bool = False, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    grid = Grid(
        [
            torch.linspace(0.0, 2.0, 4, dtype=torch.float64),
            torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64),
            torch.linspace(-1.0, 1.0, 5, dtype=torch.float64),
        ],
        categorical=[False, categorical, False],
    )
    n = 9
    index = torch.stack(
        [torch.randint(0, s, (n,), generator=gen) for s in grid.sizes], -1
    )
    index[1] = index[0]  # a repeated point
    y = torch.randn(n, generator=gen, dtype=torch.float64)
    data = BKTFData(grid, index, y)
    state = BKTFState(
        factors=[
            torch.randn(1, R, s, generator=gen, dtype=torch.float64) for s in grid.sizes
        ],
        log_lengthscale=torch.randn(1, R, 3, generator=gen, dtype=torch.float64) * 0.3
        - 0.7,
        weights=torch.randn(1, R, generator=gen, dtype=torch.float64),
        precision=torch.tensor([7.0], dtype=torch.float64),
    )
    return grid, data, state


def dense_kernel(grid: Grid, d: int, log_l: float) -> torch.Tensor:
    u = grid.unit_values(d)
    dist = (u[:, None] - u[None, :]).abs()
    if grid.categorical[d]:
        K = torch.eye(len(u), dtype=torch.float64)
    else:
        r = math.sqrt(3) * dist / math.exp(log_l)
        K = (1 + r) * torch.exp(-r)
    return K + KERNEL_JITTER * torch.eye(len(u), dtype=torch.float64)


def dense_design(grid, data, state, d):
    """Phi (n x R*S_d) built as the selection of the mode-d unfolding of the
    Kronecker product of the other modes' factors."""
    n, S = data.n, grid.sizes[d]
    Phi = torch.zeros(n, R * S, dtype=torch.float64)
    for i in range(n):
        for r in range(R):
            c = state.weights[0, r]
            for h in range(grid.dim):
                if h != d:
                    c = c * state.factors[h][0, r, data.index[i, h]]
            Phi[i, r * S + data.index[i, d]] = c
    return Phi


def dense_prior(grid, state, d):
    blocks = [
        dense_kernel(grid, d, float(state.log_lengthscale[0, r, d])) for r in range(R)
    ]
    return torch.block_diag(*blocks)


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("d", [0, 1, 2])
def test_factor_conditional_matches_dense_gaussian(categorical, d):
    grid, data, state = problem(categorical)
    S = grid.sizes[d]
    Phi = dense_design(grid, data, state, d)
    K = dense_prior(grid, state, d)
    tau = float(state.precision)
    precision = torch.linalg.inv(K) + tau * Phi.T @ Phi
    cov = torch.linalg.inv(precision)
    mean = cov @ (tau * Phi.T @ data.y)
    # The draw is affine in its standard normals: zeros give the mean, unit
    # vectors the columns of a square root of the covariance.
    m = R * S + data.n
    basis = torch.eye(m, dtype=torch.float64)
    z = torch.cat([torch.zeros(1, R * S, dtype=torch.float64), basis[:, : R * S]])
    eps = torch.cat([torch.zeros(1, data.n, dtype=torch.float64), basis[:, R * S :]])
    batch = BKTFState(
        [f.expand(m + 1, -1, -1) for f in state.factors],
        state.log_lengthscale.expand(m + 1, -1, -1),
        state.weights.expand(m + 1, -1),
        state.precision.expand(m + 1),
    )
    draws = sample_mode_factors(batch, data, d, z.reshape(m + 1, R, S), eps)
    draws = draws.reshape(m + 1, R * S)
    torch.testing.assert_close(draws[0], mean, atol=1e-7, rtol=1e-6)
    A = (draws[1:] - draws[0]).T
    torch.testing.assert_close(A @ A.T, cov, atol=1e-7, rtol=1e-6)


@pytest.mark.parametrize("d", [0, 1, 2])
def test_mode_marginal_matches_dense_likelihood(d):
    grid, data, state = problem(categorical=d == 1)
    Phi = dense_design(grid, data, state, d)
    K = dense_prior(grid, state, d)
    cov = Phi @ K @ Phi.T + torch.eye(data.n, dtype=torch.float64) / state.precision
    expected = torch.distributions.MultivariateNormal(
        torch.zeros(data.n, dtype=torch.float64), cov
    ).log_prob(data.y)
    value = mode_log_marginal(state, data, d, state.log_lengthscale[..., d])
    torch.testing.assert_close(value, expected.reshape(1))


def test_weight_conditional_matches_dense_gaussian():
    grid, data, state = problem()
    P = torch.zeros(data.n, R, dtype=torch.float64)
    for i in range(data.n):
        for r in range(R):
            P[i, r] = math.prod(
                float(state.factors[h][0, r, data.index[i, h]]) for h in range(3)
            )
    tau = float(state.precision)
    precision = tau * P.T @ P + torch.eye(R, dtype=torch.float64)
    cov = torch.linalg.inv(precision)
    mean, _ = weight_conditional(state, data)
    torch.testing.assert_close(mean[0], cov @ (tau * P.T @ data.y))
    z = torch.cat([torch.zeros(1, R), torch.eye(R)]).double()
    batch = BKTFState(
        [f.expand(R + 1, -1, -1) for f in state.factors],
        state.log_lengthscale.expand(R + 1, -1, -1),
        state.weights.expand(R + 1, -1),
        state.precision.expand(R + 1),
    )
    draws = sample_weights(batch, data, z)
    A = (draws[1:] - draws[0]).T
    torch.testing.assert_close(A @ A.T, cov)


def test_precision_conditional_matches_dense_residuals():
    grid, data, state = problem()
    prior = BKTFPrior(noise_shape=2.0, noise_rate=3.0)
    fitted = (state.weights[0] * rank_products(state, data)[0].T).sum(-1)
    shape, rate = precision_conditional(state, data, prior)
    assert shape == 2.0 + data.n / 2
    expected = 3.0 + 0.5 * float(((data.y - fitted) ** 2).sum())
    assert float(rate) == pytest.approx(expected)
