"""Acquisition maximization over a pool: the known maximizer, chunking, matches."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor

from treebo.optim.pool import optimize_acqf_pool, rows_matching


class NegativeDistance(AcquisitionFunction):
    """``-||x - target||^2``, recording the batch sizes it is called with."""

    def __init__(self, target: Tensor) -> None:
        super().__init__(model=None)
        self.target = target
        self.batches: list[int] = []

    def forward(self, X: Tensor) -> Tensor:
        assert X.shape[-2] == 1
        self.batches.append(X.shape[0])
        return -(X.squeeze(-2) - self.target).pow(2).sum(-1)


def test_the_known_maximizer_of_a_pool_of_a_hundred_thousand_is_found():
    generator = torch.Generator().manual_seed(0)
    pool = torch.rand(100_000, 5, generator=generator, dtype=torch.float64)
    target = torch.full((5,), 2.0, dtype=torch.float64)  # outside the pool
    acqf = NegativeDistance(target)
    index, value = optimize_acqf_pool(acqf, pool, chunk_size=4096)
    expected = (pool - target).pow(2).sum(-1).argmin()
    assert int(index) == int(expected)
    assert float(value) == pytest.approx(-float((pool[expected] - target).pow(2).sum()))
    # Every call scored at most one chunk: memory does not grow with the pool.
    assert max(acqf.batches) == 4096 and sum(acqf.batches) == 100_000


@pytest.mark.parametrize("where", [0, 4095, 4096, 9999])
def test_the_maximizer_is_found_in_any_chunk_and_ties_go_to_the_first(where):
    pool = torch.zeros(10_000, 2, dtype=torch.float64)
    pool[where] = 1.0
    pool[-1] = 1.0  # a tie after it
    index, _ = optimize_acqf_pool(
        NegativeDistance(torch.ones(2, dtype=torch.float64)), pool, chunk_size=4096
    )
    assert int(index) == where


def test_a_nan_score_loses_to_every_number():
    class NanAtZero(NegativeDistance):
        def forward(self, X):
            values = super().forward(X)
            return torch.where(X[..., 0, 0] == 0.0, torch.nan, values)

    pool = torch.tensor([[0.0, 0.0], [0.5, 0.5], [0.2, 0.2]], dtype=torch.float64)
    index, value = optimize_acqf_pool(NanAtZero(torch.zeros(2)), pool, chunk_size=2)
    assert int(index) == 2 and value.isfinite()


def test_a_pool_must_be_a_nonempty_matrix():
    acqf = NegativeDistance(torch.zeros(2))
    with pytest.raises(ValueError, match="pool must be an m x d"):
        optimize_acqf_pool(acqf, torch.zeros(0, 2))
    with pytest.raises(ValueError, match="chunk_size"):
        optimize_acqf_pool(acqf, torch.zeros(3, 2), chunk_size=0)


def test_matching_rows_agree_with_a_brute_force_comparison():
    generator = torch.Generator().manual_seed(1)
    pool = torch.rand(300, 3, generator=generator, dtype=torch.float64) * 10
    X = torch.cat([pool[[5, 77, 299]] + 1e-9, torch.rand(4, 3, dtype=torch.float64)])
    width = torch.full((3,), 10.0, dtype=torch.float64)
    matched = rows_matching(pool, X, width, tol=1e-6, chunk_size=64)
    brute = torch.tensor(
        [any(bool(((p - x).abs() / width <= 1e-6).all()) for x in X) for p in pool]
    )
    assert torch.equal(matched, brute) and matched.sum() == 3
    assert not rows_matching(pool, X[:0], width, 1e-6).any()
