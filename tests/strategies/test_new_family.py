"""A new model family needs its own module and one registration line, nothing else.

``PlainGPStrategy`` is a stub family written here, outside the package: BoTorch's
``SingleTaskGP`` on the encoded columns with LogEI. Registering it is the only change;
the loop, ``minimize``, pools, checkpoints and the strategy lookup then take it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from botorch.acquisition import AcquisitionFunction, LogExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import Normalize
from botorch.optim import optimize_acqf
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo import Real, TreeOptimizer, TreeSpace, Vertex, minimize
from treebo.strategies import STRATEGIES, Strategy, make_strategy, register_strategy
from treebo.strategies.base import (
    Observations,
    Proposal,
    require_real_parameters,
    strategy_identity,
)


@dataclass(frozen=True)
class PlainGPOptions:
    """The stub family's one setting."""

    raw_samples: int = 32


class PlainGPStrategy(Strategy):
    """A GP on the encoded columns and LogEI (real parameters only)."""

    name = "test_plain_gp"
    options_type = PlainGPOptions

    def validate_space(self, space: TreeSpace) -> None:
        require_real_parameters(space, self.name)

    def acquisition(self, observations: Observations) -> AcquisitionFunction:
        bounds = observations.space.bounds.to(observations.X)
        model = SingleTaskGP(
            observations.X,
            observations.y,
            input_transform=Normalize(d=2, bounds=bounds),
        )
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        self.last_model = model
        return LogExpectedImprovement(model, best_f=observations.y.max())

    def propose(self, observations: Observations) -> Proposal:
        acqf = self.acquisition(observations)
        bounds = observations.space.bounds.to(observations.X)
        x, _ = optimize_acqf(
            acqf, bounds, q=1, num_restarts=2, raw_samples=self.options.raw_samples
        )
        return Proposal(x[0].detach(), "bo")


SPACE = TreeSpace(Vertex([Real("x", 0.0, 1.0), Real("y", -1.0, 1.0)]))


def objective(params: dict) -> float:
    return (params["x"] - 0.3) ** 2 + (params["y"] + 0.2) ** 2


@pytest.fixture
def registered():
    register_strategy(PlainGPStrategy)  # the one registration line
    yield
    STRATEGIES.pop(PlainGPStrategy.name, None)


def test_a_new_family_is_its_module_plus_one_registration_line(registered, tmp_path):
    def run():
        return minimize(
            objective,
            SPACE,
            budget=8,
            seed=0,
            strategy="test_plain_gp",
            checkpoint=tmp_path / "run.jsonl",
        )

    result = run()
    kinds = [trial.kind for trial in result.history]
    assert kinds == ["initial"] * 5 + ["bo"] * 3  # every proposal the family's
    assert result.best_value < objective({"x": 0.9, "y": 0.9})
    # The loop keeps its model, and a checkpoint names the family.
    assert type(make_strategy("test_plain_gp")) is PlainGPStrategy
    assert strategy_identity(PlainGPStrategy()) == "test_plain_gp"
    with pytest.warns(UserWarning, match="already holds 8 evaluations"):
        resumed = run()
    assert resumed.values == result.values  # nothing re-evaluated
    # Pools score the family's acquisition.
    opt = TreeOptimizer(SPACE, seed=1, strategy="test_plain_gp", n_initial=3)
    for params in SPACE.to_dicts(SPACE.sample(3, seed=2)):
        opt.tell(params, objective(params))
    pool = SPACE.sample(20, seed=3)
    chosen = opt.ask(candidates=pool)
    assert any(chosen == params for params in SPACE.to_dicts(pool))
    assert isinstance(opt.last_model, SingleTaskGP)


def test_an_unregistered_family_is_not_found_by_name():
    with pytest.raises(ValueError, match="strategy must be one of"):
        make_strategy("test_plain_gp")
    strategy = PlainGPStrategy(dtype=torch.float64)
    assert make_strategy(strategy) is strategy  # an instance needs no name
