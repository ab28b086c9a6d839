"""The Add-Tree kernel's fused slot Gram: values and gradients against the dense sum."""

import pytest
import torch

from treebo.add_tree import slot_gram
from treebo.add_tree.slot_gram import SlotGram
from treebo.gp.correlation import stationary_correlation


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
    monkeypatch.setattr(slot_gram, "BLOCK_ELEMENTS", block_elements)
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
    monkeypatch.setattr(slot_gram, "KEEP_ELEMENTS", 0)
    K_again = gram(a, b, scale, offset, tau)
    assert torch.equal(K_again, K)
    recomputed = torch.autograd.grad(K_again.square().sum(), inputs)
    assert all(map(torch.equal, kept, recomputed))
