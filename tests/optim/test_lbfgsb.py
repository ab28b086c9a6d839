import pytest
import torch

import treebo.optim.lbfgsb as lbfgsb
from treebo.optim.lbfgsb import minimize_independent

# Problem b: a convex quadratic 0.5 (x - c_b)' A_b (x - c_b), A_b of very
# different scales, some centres outside the bounds.
GEN = torch.Generator().manual_seed(0)
M = torch.randn(4, 3, 3, generator=GEN, dtype=torch.float64)
SCALES = torch.tensor([1e-2, 1.0, 1e2, 1.0], dtype=torch.float64)
A = SCALES.view(-1, 1, 1) * (M @ M.mT + 0.5 * torch.eye(3, dtype=torch.float64))
CENTRES = torch.tensor(
    [[0.5, 1.0, 2.0], [-1.0, 0.3, 0.2], [0.1, 0.2, 0.3], [2.0, -3.0, 0.0]],
    dtype=torch.float64,
)
LOWER = torch.tensor([0.0, -1.0, -torch.inf], dtype=torch.float64)
UPPER = torch.tensor([1.0, torch.inf, torch.inf], dtype=torch.float64)


def quadratics(x):
    r = x - CENTRES
    Ar = (A @ r.unsqueeze(-1)).squeeze(-1)
    return 0.5 * (r * Ar).sum(-1), Ar


def projected_gradient(x, grad):
    at_lower = (x <= LOWER) & (grad > 0)
    at_upper = (x >= UPPER) & (grad < 0)
    return grad.masked_fill(at_lower | at_upper, 0.0)


@pytest.mark.parametrize("batched", [True, False])
def test_each_problem_reaches_its_bound_constrained_minimum(batched, monkeypatch):
    if not batched:  # the joint fallback of other SciPy versions
        monkeypatch.setattr(lbfgsb, "batched_lbfgsb_available", lambda: False)
    elif not lbfgsb.batched_lbfgsb_available():
        pytest.skip("BoTorch's batched L-BFGS-B does not support this SciPy")
    x0 = torch.zeros(4, 3, dtype=torch.float64)
    x, values, steps = minimize_independent(
        quadratics, x0, LOWER, UPPER, maxiter=500, ftol=1e-15, gtol=1e-10
    )
    assert bool(((x >= LOWER) & (x <= UPPER)).all())
    expected, grad = quadratics(x)
    torch.testing.assert_close(values, expected)
    # KKT: the projected gradient vanishes, relative to each problem's scale.
    pg = projected_gradient(x, grad).abs().amax(-1) / SCALES
    assert float(pg.max()) < 1e-5
    # Some bounds are active (centres outside the box), so this is not the
    # unconstrained minimum.
    assert not torch.allclose(x, CENTRES)
    assert steps.shape == (4,)


def test_problems_run_their_own_iterations():
    if not lbfgsb.batched_lbfgsb_available():
        pytest.skip("BoTorch's batched L-BFGS-B does not support this SciPy")
    # Problem 2 starts at its minimum (its centre lies inside the box),
    # problem 0 far from its own.
    x0 = CENTRES.clamp(LOWER, UPPER)
    x0[0] = torch.tensor([1.0, 5.0, -4.0], dtype=torch.float64)
    _, _, steps = minimize_independent(quadratics, x0, LOWER, UPPER, maxiter=500)
    assert int(steps[2]) <= 1 < int(steps[0])


def test_non_finite_values_do_not_stop_the_other_problems():
    def with_a_hole(x):
        values, grads = quadratics(x)
        # Problem 0 is NaN wherever its first coordinate exceeds 0.2.
        hole = (x[:, 0] > 0.2) & (torch.arange(4) == 0)
        return values.masked_fill(hole, float("nan")), grads

    x0 = torch.zeros(4, 3, dtype=torch.float64)
    x, _, _ = minimize_independent(with_a_hole, x0, LOWER, UPPER, maxiter=500)
    reference, _, _ = minimize_independent(quadratics, x0, LOWER, UPPER, maxiter=500)
    torch.testing.assert_close(x[1:], reference[1:], atol=1e-5, rtol=0)
    assert float(x[0, 0]) <= 0.2


def test_bad_input_is_refused():
    x0 = torch.zeros(4, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="B x P"):
        minimize_independent(quadratics, x0[0], LOWER)
    with pytest.raises(ValueError, match="B x P"):
        minimize_independent(quadratics, x0, LOWER[:2])
    with pytest.raises(ValueError, match="exceed"):
        minimize_independent(quadratics, x0, UPPER, LOWER)
    with pytest.raises(ValueError, match="maxiter"):
        minimize_independent(quadratics, x0, LOWER, maxiter=0)
