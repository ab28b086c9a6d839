import pytest
import torch
from botorch.acquisition import AcquisitionFunction

from treebo.optim.sobol import optimize_acqf_sobol


class Bump(AcquisitionFunction):
    """A narrow peak at ``centre`` on a flat floor (no model)."""

    def __init__(self, centre, width=0.02):
        torch.nn.Module.__init__(self)
        self.centre, self.width = centre, width
        self.calls = 0

    def forward(self, X):
        self.calls += X.shape[0]
        d2 = (X.squeeze(-2) - self.centre).square().sum(-1)
        return torch.exp(-d2 / (2 * self.width**2))


@pytest.mark.full_optimizers  # checks what the optimizer finds
def test_finds_a_narrow_peak_and_polishes_onto_it():
    centre = torch.tensor([0.731, 0.218], dtype=torch.float64)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    acqf = Bump(centre)
    raw, raw_value = optimize_acqf_sobol(acqf, bounds, num_points=4096, num_polish=0)
    x, value = optimize_acqf_sobol(acqf, bounds, num_points=4096, seed=0)
    assert raw.shape == x.shape == (1, 2)
    assert float(raw_value) < 1 - 1e-6  # the set alone misses the top
    torch.testing.assert_close(x.squeeze(0), centre, atol=1e-5, rtol=0)
    assert float(value) == pytest.approx(1.0, abs=1e-8)


def test_scores_every_point_in_batches_inside_the_bounds():
    bounds = torch.tensor([[-3.0], [-1.0]], dtype=torch.float64)
    acqf = Bump(torch.tensor([-1.5], dtype=torch.float64), width=0.3)
    x, _ = optimize_acqf_sobol(
        acqf, bounds, num_points=1000, num_polish=0, batch_size=64, seed=1
    )
    assert acqf.calls == 1000
    assert -3.0 <= float(x) <= -1.0
    again, _ = optimize_acqf_sobol(
        acqf, bounds, num_points=1000, num_polish=0, batch_size=64, seed=1
    )
    assert torch.equal(x, again)  # deterministic given the seed


def test_bad_sizes_are_refused():
    bounds = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    acqf = Bump(torch.tensor([0.5], dtype=torch.float64))
    with pytest.raises(ValueError, match="num_points"):
        optimize_acqf_sobol(acqf, bounds, num_points=0)
    with pytest.raises(ValueError, match="num_polish"):
        optimize_acqf_sobol(acqf, bounds, num_polish=-1)
