"""Stationary correlations and squared distances."""

import math

import pytest
import torch

from treebo.gp.correlation import (
    matern52_parts,
    pairwise_sq_dist,
    stationary_correlation,
)


@pytest.mark.parametrize("D", [1, 3, 7])  # both branches of pairwise_sq_dist
def test_squared_distances_match_the_dense_formula(D):
    g = torch.Generator().manual_seed(D)
    a = torch.randn(2, 5, D, generator=g, dtype=torch.float64) * 10
    b = torch.randn(2, 4, D, generator=g, dtype=torch.float64) * 10
    dense = ((a.unsqueeze(-2) - b.unsqueeze(-3)) ** 2).sum(-1)
    torch.testing.assert_close(pairwise_sq_dist(a, b), dense)
    assert bool((pairwise_sq_dist(a, a).diagonal(dim1=-2, dim2=-1).abs() < 1e-9).all())


def test_correlations_match_their_closed_forms_and_gradients():
    sq = torch.tensor([0.0, 0.3, 1.0, 4.0], dtype=torch.float64, requires_grad=True)
    rbf = stationary_correlation(sq, "rbf")
    torch.testing.assert_close(rbf, torch.exp(-sq / 2))
    r = sq.detach().sqrt()
    matern = (1 + math.sqrt(5) * r + 5 * r**2 / 3) * torch.exp(-math.sqrt(5) * r)
    torch.testing.assert_close(stationary_correlation(sq, "matern52"), matern)
    k, t = matern52_parts(sq.detach())
    torch.testing.assert_close(k, matern)
    # d kappa / d(r^2) = -5/6 t, also through the fused backward
    positive = sq.detach()[1:].clone().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda s: stationary_correlation(s, "matern52"), (positive,)
    )
