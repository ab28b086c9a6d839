import math

import pytest
import torch

from treebo.test_functions.nonstationary import RKHS, Exp2D


def test_rkhs_is_the_sum_of_its_bumps_and_its_optimum_is_exact():
    f = RKHS()
    wide = zip([0.1, 0.15, 0.08, 0.3, 0.4], [4, -1, 2, -2, 1], strict=True)
    narrow = zip(
        [0.8, 0.85, 0.9, 0.95, 0.92, 0.74, 0.91, 0.89, 0.79, 0.88, 0.86, 0.96, 0.99],
        [3, 4, 2, 1, -1, 2, 2, 3, 3, 2, -1, -2, 4],
        strict=True,
    )
    bumps = [(s, a, 0.1) for s, a in wide] + [(t, b, 0.01) for t, b in narrow]
    bumps.append((0.82, -3, 0.01))
    for x in (0.0, 0.3, 0.77, 0.891):
        value = sum(a * math.exp(-((x - s) ** 2) / (2 * w**2)) for s, a, w in bumps)
        X = torch.tensor([[x]], dtype=torch.float64)
        assert float(f(X)) == pytest.approx(-value)
    grid = torch.linspace(0, 1, 200_001, dtype=torch.float64).unsqueeze(-1)
    assert float(f(f.optimizers)) == pytest.approx(f.optimal_value, abs=1e-12)
    assert float(f(grid).min()) >= f.optimal_value  # no grid point beats it


def test_exp2d_optimum_is_exact():
    f = Exp2D()
    axis = torch.linspace(-2, 6, 801, dtype=torch.float64)
    grid = torch.cartesian_prod(axis, axis)
    assert float(f(f.optimizers)) == pytest.approx(f.optimal_value, abs=1e-12)
    assert float(f(grid).min()) >= f.optimal_value
