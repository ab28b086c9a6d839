import math

import pytest
import torch

from treebo.treed.profile import (
    MaternGaussianQuadratics,
    ProfiledLeafObjective,
    profile_leaves,
)


@pytest.mark.parametrize("d", [2, 6])  # both ways of forming distances
def test_matern_gaussian_quadratics_values_and_gradients(d):
    gen = torch.Generator().manual_seed(0)
    Z = torch.rand(3, 5, d, generator=gen, dtype=torch.float64) * 3
    diag = torch.rand(3, 5, generator=gen, dtype=torch.float64) + 0.1
    w = torch.ones(3, 5, dtype=torch.float64)
    w[1, 3:] = 0.0  # padding rows: independent unit variables in ``diag``
    r = torch.randn(3, 5, 2, generator=gen, dtype=torch.float64) * w.unsqueeze(-1)
    gram, half_logdet = MaternGaussianQuadratics.apply(Z, diag, w, r)
    dist = torch.cdist(Z, Z)
    s5 = 5**0.5 * dist
    K = (1 + s5 + s5.square() / 3) * torch.exp(-s5)
    C = K * w.unsqueeze(-1) * w.unsqueeze(-2) + torch.diag_embed(diag)
    assert torch.allclose(gram, r.mT @ torch.linalg.solve(C, r))
    assert torch.allclose(half_logdet, 0.5 * torch.logdet(C))
    assert torch.autograd.gradcheck(
        lambda Z, diag: MaternGaussianQuadratics.apply(Z, diag, w, r),
        (Z.requires_grad_(True), diag.requires_grad_(True)),
    )


def _factors(batch=(), F=7, L=3, seed=0):
    """Random Gram matrices and log-determinants of F factors of L leaves."""
    gen = torch.Generator().manual_seed(seed)
    A = torch.randn(*batch, F, 4, 2, generator=gen, dtype=torch.float64)
    gram = A.mT @ A + 0.1 * torch.eye(2, dtype=torch.float64)
    half_logdet = torch.randn(*batch, F, generator=gen, dtype=torch.float64)
    leaf = torch.tensor([0, 1, 2, 0, 1, 2, 0])[:F] % L
    weight = 2.0 / (1.0 + torch.arange(F, dtype=torch.float64) % 3)
    count = weight * torch.randint(2, 9, (F,), generator=gen).double()
    log_ratio = torch.randn(*batch, L, generator=gen, dtype=torch.float64) - 4
    return gram, half_logdet, log_ratio, leaf, weight, count


PRIORS = (0.0, 1.0, -4.0, 1.0)


@pytest.mark.parametrize("floor", [1e-6, 0.5])  # the floor binds with 0.5
def test_batched_leaf_profiles_equal_one_candidate_at_a_time(floor):
    gram, half_logdet, log_ratio, leaf, weight, count = _factors(batch=(4,))
    batched = profile_leaves(
        gram, half_logdet, log_ratio, leaf, weight, count, PRIORS, floor
    )
    for g in range(4):
        one = profile_leaves(
            gram[g], half_logdet[g], log_ratio[g], leaf, weight, count, PRIORS, floor
        )
        for a, b in zip(batched, one, strict=True):
            assert torch.allclose(a[g], b)
        value, mean, t = ProfiledLeafObjective.apply(
            gram[g], half_logdet[g], log_ratio[g], leaf, weight, count, PRIORS, floor
        )
        assert math.isclose(float(value), float(one.value.sum()), rel_tol=1e-12)
        assert torch.equal(mean, one.mean) and torch.equal(t, one.log_scale)
    if floor == 0.5:
        assert bool(batched.binds.any())
