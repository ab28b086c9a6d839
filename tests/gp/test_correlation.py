"""Stationary correlations, squared distances and the fused slot Gram."""

import math

import pytest
import torch

from treebo.gp import correlation
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
@pytest.mark.parametrize(
    "parts, block_elements",  # one block, or one row per block
    [
        ("scales", 2**20),
        ("offsets", 2**20),
        ("shared", 2**20),
        ("all", 2**20),
        ("all", 7),
    ],
)
def test_the_slot_gram_is_the_weighted_sum_of_slot_correlations(
    base_kernel, parts, block_elements, monkeypatch
):
    monkeypatch.setattr(correlation, "BLOCK_ELEMENTS", block_elements)
    g = torch.Generator().manual_seed(0)

    def rand(*shape, grad=True):
        t = torch.rand(*shape, generator=g, dtype=torch.float64)
        return t.requires_grad_(grad)

    a = torch.randn(3, 5, 2, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, 4, 2, generator=g, dtype=torch.float64, requires_grad=True)
    ids_a = torch.randint(0, 2, (3, 5), generator=g)
    ids_b = torch.randint(0, 2, (3, 4), generator=g)
    same = (ids_a.unsqueeze(-1) == ids_b.unsqueeze(-2)).to(torch.float64)
    scale = rand(3, 5)
    offset = rand(3, 5) if parts in ("offsets", "all") else None
    tau = rand(3) if parts in ("shared", "all") else None
    p = (rand(3, 5, grad=False) > 0.3).to(torch.float64)
    q = (rand(3, 4, grad=False) > 0.3).to(torch.float64)

    def gram(a, b, scale, offset, tau):
        return SlotGram.apply(a, b, ids_a, ids_b, scale, offset, tau, p, q, base_kernel)

    K = gram(a, b, scale, offset, tau)
    sq = ((a.unsqueeze(-2) - b.unsqueeze(-3)) ** 2).sum(-1)
    weight = same * scale.unsqueeze(-1)
    if tau is not None:
        weight = weight + tau.view(3, 1, 1) * p.unsqueeze(-1) * q.unsqueeze(-2)
    dense = weight * stationary_correlation(sq, base_kernel)
    if offset is not None:
        dense = dense + same * offset.unsqueeze(-1)
    torch.testing.assert_close(K, dense.sum(0))
    assert torch.autograd.gradcheck(gram, (a, b, scale, offset, tau))
    # Kept or recomputed for the backward pass, the parts give the same bits.
    inputs = [t for t in (a, b, scale, offset, tau) if t is not None]
    kept = torch.autograd.grad(K.square().sum(), inputs)
    monkeypatch.setattr(correlation, "KEEP_ELEMENTS", 0)
    K_again = gram(a, b, scale, offset, tau)
    assert torch.equal(K_again, K)
    recomputed = torch.autograd.grad(K_again.square().sum(), inputs)
    assert all(map(torch.equal, kept, recomputed))
