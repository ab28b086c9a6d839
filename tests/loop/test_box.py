import math

import pytest
import torch

from treebo import ConfigurationError, minimize_box
from treebo.loop import box_space


def test_tensors_in_the_result_match_the_history():
    bounds = torch.tensor([[-1.0, 0.0, 2.0], [1.0, 5.0, 3.0]])
    seen = []

    def objective(x):
        seen.append(x.clone())
        if x[1] > 4.0:
            raise RuntimeError("out of range")
        return (x - bounds.mean(0).double()).square().sum()

    result = minimize_box(objective, bounds, budget=10, seed=0, strategy="add_tree")
    assert result.X.shape == (10, 3) and torch.equal(result.X, torch.stack(seen))
    failed = result.Y.isnan()
    assert failed.tolist() == [x[1] > 4.0 for x in seen]
    assert (result.X >= bounds[0]).all() and (result.X <= bounds[1]).all()
    best = int(result.Y.nan_to_num(math.inf).argmin())
    assert result.best_observed_value == float(result.Y[best])
    # The recommendation is an evaluated point (noise inferred: the model's pick).
    assert (result.X == result.best_x).all(-1).any()


def test_an_objective_returning_several_values_stops_at_the_first():
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    calls = []

    def objective(x):
        calls.append(x)
        return x

    with pytest.raises(TypeError, match="Tensor of several values.*Ax"):
        minimize_box(objective, bounds, budget=3, seed=0, strategy="add_tree")
    assert len(calls) == 1


@pytest.mark.parametrize(
    "bounds, name",
    [
        ([[0.0, 1.0], [1.0, 1.0]], "'x1'"),
        ([[0.0, float("inf")], [1.0, 2.0]], "'x1'"),
        ([[0.0, 1.0]], "2 x d"),
    ],
)
def test_bad_bounds_are_refused_by_name(bounds, name):
    with pytest.raises(ConfigurationError, match=name):
        box_space(torch.tensor(bounds))
