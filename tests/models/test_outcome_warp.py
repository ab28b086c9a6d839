import math

import numpy as np
import pytest
import torch
from scipy import stats

from treebo.models.outcome_warp import fit_yeo_johnson, warp_scores, yeo_johnson


def _reference(y: float, lam: float) -> float:
    """Yeo & Johnson's definition, case by case."""
    if y >= 0:
        return math.log1p(y) if lam == 0 else ((1 + y) ** lam - 1) / lam
    if lam == 2:
        return -math.log1p(-y)
    return -((1 - y) ** (2 - lam) - 1) / (2 - lam)


@pytest.mark.parametrize("lam", [-1.5, 0.0, 0.5, 1.0, 2.0, 3.1])
def test_yeo_johnson_matches_definition(lam):
    y = torch.tensor([-3.0, -0.5, -1e-3, 0.0, 1e-3, 0.7, 4.0], dtype=torch.float64)
    expected = torch.tensor([_reference(float(v), lam) for v in y], dtype=y.dtype)
    torch.testing.assert_close(yeo_johnson(y, lam), expected, rtol=1e-12, atol=1e-14)


def test_yeo_johnson_is_continuous_in_lambda_at_its_special_values():
    y = torch.tensor([-2.0, 1.5], dtype=torch.float64)
    for lam in (0.0, 2.0):
        near = yeo_johnson(y, lam + 1e-7)
        torch.testing.assert_close(near, yeo_johnson(y, lam), rtol=1e-6, atol=1e-6)


def test_fit_picks_the_grid_maximum_of_the_profile_likelihood():
    torch.manual_seed(3)
    y = -torch.distributions.LogNormal(0.0, 1.0).sample((40,))  # long lower tail
    y = (y - y.mean()) / y.std()
    grid = torch.linspace(-2, 4, 121, dtype=torch.float64)
    llf = [stats.yeojohnson_llf(float(g), y.numpy()) for g in grid]
    assert float(fit_yeo_johnson(y.double(), grid)) == pytest.approx(
        float(grid[int(np.argmax(llf))])
    )
    # A long lower tail asks for an exponent above one (compress it).
    assert float(fit_yeo_johnson(y.double())) > 1.0


def test_warp_scores_is_monotone_standardized_and_scale_free():
    torch.manual_seed(0)
    errors = torch.cat([torch.rand(20) * 0.05, torch.tensor([0.6, 0.9])]).double()
    scores = -errors.unsqueeze(-1)
    warped = warp_scores(scores)
    assert torch.equal(warped.squeeze(-1).argsort(), scores.squeeze(-1).argsort())
    assert float(warped.mean()) == pytest.approx(0.0, abs=1e-12)
    assert float(warped.std()) == pytest.approx(1.0)
    torch.testing.assert_close(warp_scores(7.0 * scores - 3.0), warped)
    # The good scores get more of the spread than they had.
    best = scores.squeeze(-1).topk(10).values
    spread_before = (best.max() - best.min()) / scores.std()
    top = warped.squeeze(-1).topk(10).values
    assert float(top.max() - top.min()) > 2 * float(spread_before)


def test_warp_scores_puts_failures_at_the_bottom_and_ignores_them():
    scores = torch.tensor([[0.1], [0.5], [-2.0], [0.0], [0.3]], dtype=torch.float64)
    failed = torch.tensor([False, False, False, True, False])
    warped = warp_scores(scores, failed)
    alone = warp_scores(scores[~failed])
    torch.testing.assert_close(warped[~failed], alone)
    assert float(warped[3]) == float(alone.min())


def test_warp_scores_leaves_too_few_or_constant_scores_alone():
    two = torch.tensor([[1.0], [2.0]], dtype=torch.float64)
    assert torch.equal(warp_scores(two), two)
    flat = torch.ones(4, 1, dtype=torch.float64)
    assert torch.equal(warp_scores(flat), flat)
