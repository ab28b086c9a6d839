import pytest
import torch

from treebo.tree_additive import TreeAdditiveGP, TreeAdditiveUCB, optimize_acqf_zooming


class _SeparableQuadratic:
    """-(x - c)^2 summed over variables, as unary tables; chain edges of zeros."""

    def __init__(self, centre):
        d = centre.shape[0]
        self.centre = centre
        edges = torch.stack([torch.arange(d - 1), torch.arange(1, d)], -1)
        self.model = type("M", (), {"edges": edges})()

    def grid_values(self, grid):
        unary = -(grid - self.centre.unsqueeze(-1)).square()
        E = self.model.edges.shape[0]
        R = grid.shape[-1]
        return unary, grid.new_zeros(*grid.shape[:-2], E, R, R)

    def constant(self):
        return torch.tensor(0.0, dtype=torch.float64)


def test_zooming_reaches_grid_resolution_on_a_separable_quadratic_in_50_dims():
    d, R, L = 50, 4, 5
    g = torch.Generator().manual_seed(0)
    centre = torch.rand(d, generator=g, dtype=torch.float64) * 2 - 1
    bounds = torch.tensor([[-1.0] * d, [1.0] * d], dtype=torch.float64)
    x, value = optimize_acqf_zooming(
        _SeparableQuadratic(centre), bounds, grid_size=R, num_levels=L, seed=0
    )
    # The chosen cell at the last level has width 2 / R^L and holds the centre
    # on every axis (a quadratic's best cell is the one containing its peak, up
    # to a neighbour when the peak sits near a cell edge).
    assert (x.squeeze(0) - centre).abs().max() <= 1.0 / R**L + 1e-12
    assert float(value) == pytest.approx(-float((x.squeeze(0) - centre).square().sum()))


def test_the_returned_value_is_the_acquisition_at_the_candidate():
    g = torch.Generator().manual_seed(1)
    X = torch.rand(25, 4, generator=g, dtype=torch.float64)
    Y = torch.sin(5 * X[:, :1] * X[:, 1:2]) + X[:, 2:3] - X[:, 3:]
    model = TreeAdditiveGP(X, Y, edges=torch.tensor([[0, 1], [1, 3]])).eval()
    acqf = TreeAdditiveUCB(model, beta=1.0)
    bounds = torch.tensor([[0.0] * 4, [1.0] * 4], dtype=torch.float64)
    x, value = optimize_acqf_zooming(acqf, bounds, seed=0, num_restarts=3)
    assert float(acqf(x.unsqueeze(0))) == pytest.approx(float(value), abs=1e-10)
    # Better than a large random sample of the box.
    random = torch.rand(2000, 1, 4, generator=g, dtype=torch.float64)
    assert float(value) >= float(acqf(random).max()) - 1e-3


@pytest.mark.parametrize("name", ["grid_size", "num_levels", "num_restarts"])
def test_settings_are_checked_by_name(name):
    acqf = _SeparableQuadratic(torch.zeros(2, dtype=torch.float64))
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match=name):
        optimize_acqf_zooming(acqf, bounds, **{name: 0})


def test_every_restart_can_be_returned_best_first():
    g = torch.Generator().manual_seed(2)
    X = torch.rand(20, 3, generator=g, dtype=torch.float64)
    model = TreeAdditiveGP(X, X.sin().sum(-1, keepdim=True)).eval()
    acqf = TreeAdditiveUCB(model, beta=4.0)
    bounds = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.float64)
    best, value = optimize_acqf_zooming(acqf, bounds, seed=3, num_restarts=5)
    points, values = optimize_acqf_zooming(
        acqf, bounds, seed=3, num_restarts=5, return_restarts=True
    )
    assert points.shape == (5, 3) and (values[:-1] >= values[1:]).all()
    assert torch.equal(points[:1], best) and values[0] == value
    with torch.no_grad():
        assert torch.allclose(acqf(points.unsqueeze(-2)), values)
