import copy
import functools
import math

import pytest
import torch

from treebo.gp import fit_model
from treebo.tree_additive import TreeAdditiveGP, TreeAdditiveUCB, tree_additive_beta


@functools.cache
def _fitted_once():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(25, 4, generator=g, dtype=torch.float64)
    Y = torch.sin(5 * X[:, :1] * X[:, 1:2]) + X[:, 2:3] - X[:, 3:]
    return fit_model(TreeAdditiveGP(X, Y, edges=torch.tensor([[1, 0], [1, 3]])))


def _model():
    """A fitted model of its own (a copy of one fit shared by the tests)."""
    return copy.deepcopy(_fitted_once())


@pytest.mark.parametrize("maximize", [True, False])
def test_the_ucb_is_a_sum_of_component_bounds(maximize):
    model = _model()
    acqf = TreeAdditiveUCB(model, beta=2.0, maximize=maximize)
    X = torch.rand(6, 1, 4, dtype=torch.float64)
    post = model.component_posterior(X.squeeze(-2))
    sign = 1.0 if maximize else -1.0
    expected = sign * (post.offset + post.mean.sum(-1))
    expected = expected + math.sqrt(2.0) * post.variance.sqrt().sum(-1)
    assert torch.allclose(acqf(X), expected, atol=1e-12)


def test_grid_tables_sum_to_the_ucb_at_every_grid_point():
    model = _model()
    acqf = TreeAdditiveUCB(model, beta=1.5)
    grid = torch.rand(4, 3, dtype=torch.float64)
    with torch.no_grad():
        unary, pairwise = acqf.grid_values(grid)
        for index in [(0, 1, 2, 0), (2, 2, 1, 1), (1, 0, 0, 2)]:
            x = grid[torch.arange(4), torch.tensor(index)].reshape(1, 1, 4)
            # edges are stored as (0, 1), (1, 3); variable 2 is isolated
            total = acqf.constant() + sum(unary[i, index[i]] for i in range(4))
            total = total + pairwise[0, index[0], index[1]]
            total = total + pairwise[1, index[1], index[3]]
            assert float(total) == pytest.approx(float(acqf(x)), abs=1e-12)
    assert (unary[:2] == 0).all() and (unary[3] == 0).all()


def test_beta_schedule_and_checks():
    assert tree_additive_beta(5) == pytest.approx(0.5 * math.log(10))
    assert float(TreeAdditiveUCB(_model()).beta) == pytest.approx(
        tree_additive_beta(25)
    )
    with pytest.raises(ValueError, match="beta"):
        TreeAdditiveUCB(_model(), beta=-1.0)
    with pytest.raises(TypeError, match="TreeAdditiveGP"):
        TreeAdditiveUCB(object())
