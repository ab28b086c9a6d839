"""Batched L-BFGS-B: bounds, frozen entries, values."""

from __future__ import annotations

import pytest
import torch

from treebo.optim import maximize_batched


def test_maximize_batched_respects_bounds_and_frozen_entries():
    target = torch.tensor([[0.3, 2.0], [-1.0, 0.5]])

    def f(x):
        return -(x - target).pow(2).sum(-1)

    x0 = torch.zeros(2, 2)
    free = torch.tensor([[True, True], [False, True]])
    x, values = maximize_batched(
        f, x0, torch.tensor([-2.0, -2.0]), torch.tensor([2.0, 1.0]), free=free
    )
    torch.testing.assert_close(
        x, torch.tensor([[0.3, 1.0], [0.0, 0.5]]), atol=1e-6, rtol=0
    )
    with pytest.raises(ValueError, match="lower bounds exceed"):
        maximize_batched(f, x0, torch.tensor(1.0), torch.tensor(0.0))
