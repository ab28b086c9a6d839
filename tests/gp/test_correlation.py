"""Stationary correlations, squared distances and the fused slot Gram."""

import math

import pytest
import torch

from treebo.gp.correlation import (
    SlotGram,
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


@pytest.mark.parametrize("base_kernel", ["rbf", "matern52"])
def test_the_slot_gram_is_the_weighted_sum_of_slot_correlations(base_kernel):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 5, 2, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, 4, 2, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.rand(3, 5, 4, generator=g, dtype=torch.float64, requires_grad=True)
    K = SlotGram.apply(a, b, w, base_kernel)
    sq = ((a.unsqueeze(-2) - b.unsqueeze(-3)) ** 2).sum(-1)
    dense = (w * stationary_correlation(sq, base_kernel)).sum(0)
    torch.testing.assert_close(K, dense)
    assert torch.autograd.gradcheck(
        lambda a, b, w: SlotGram.apply(a, b, w, base_kernel), (a, b, w)
    )
