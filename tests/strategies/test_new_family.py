"""A new model family is a package with one entry point, nothing else.

The test writes a real package into a temporary folder, as a third party would ship
it: a module with a strategy (BoTorch's ``SingleTaskGP`` on the encoded columns with
LogEI) and package metadata that declares it under the ``treebo.strategies`` entry
point. Once the folder is on the path, the loop, ``minimize``, pools, checkpoints and
the lookup by name take it, with no registration call and no list in treebo edited.
"""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from treebo import Real, TreeOptimizer, TreeSpace, Vertex, minimize
from treebo.strategies import STRATEGIES, make_strategy
from treebo.strategies import base as strategies_base
from treebo.strategies.base import strategy_identity

FAMILY = '''
"""A GP on the encoded columns and LogEI (real parameters only)."""

from dataclasses import dataclass

from botorch.acquisition import LogExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import Normalize
from botorch.optim import optimize_acqf
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo.strategies import Proposal, Strategy
from treebo.strategies.base import require_real_parameters


@dataclass(frozen=True)
class PlainGPOptions:
    raw_samples: int = 32


class PlainGPStrategy(Strategy):
    name = "test_plain_gp"
    options_type = PlainGPOptions
    handles_pending = False

    def validate_space(self, space):
        require_real_parameters(space, self.name)

    def acquisition(self, observations):
        bounds = observations.space.bounds.to(observations.X)
        model = SingleTaskGP(
            observations.X, observations.y,
            input_transform=Normalize(d=bounds.shape[-1], bounds=bounds),
        )
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        self.last_model = model
        return LogExpectedImprovement(model, best_f=observations.y.max())

    def propose(self, observations):
        acqf = self.acquisition(observations)
        bounds = observations.space.bounds.to(observations.X)
        x, _ = optimize_acqf(
            acqf, bounds, q=1, num_restarts=2, raw_samples=self.options.raw_samples
        )
        return Proposal(x[0].detach(), "bo")
'''

METADATA = "Metadata-Version: 2.1\nName: plain-gp-family\nVersion: 0.1\n"
ENTRY_POINTS = """[treebo.strategies]
test_plain_gp = plain_gp_family:PlainGPStrategy
"""

SPACE = TreeSpace(Vertex([Real("x", 0.0, 1.0), Real("y", -1.0, 1.0)]))


def objective(params: dict) -> float:
    return (params["x"] - 0.3) ** 2 + (params["y"] + 0.2) ** 2


@pytest.fixture
def installed_family(tmp_path, monkeypatch):
    """The family's package and its metadata in a folder on the path."""
    site = tmp_path / "site"
    (site / "plain_gp_family").mkdir(parents=True)
    (site / "plain_gp_family" / "__init__.py").write_text(textwrap.dedent(FAMILY))
    info = site / "plain_gp_family-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(METADATA)
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    monkeypatch.setattr(strategies_base, "_entry_points_loaded", False)
    yield
    STRATEGIES.pop("test_plain_gp", None)
    sys.modules.pop("plain_gp_family", None)


def test_an_installed_family_runs_through_the_whole_loop(installed_family, tmp_path):
    def run():
        return minimize(
            objective,
            SPACE,
            budget=12,
            seed=3,
            strategy="test_plain_gp",
            checkpoint=tmp_path / "run.jsonl",
        )

    result = run()
    kinds = [trial.kind for trial in result.history]
    assert kinds == ["initial"] * 5 + ["bo"] * 7  # every proposal the family's
    # It improves on its initial design: the model, not the design, found the best.
    design_best = min(t.value for t in result.history[:5])
    assert min(t.value for t in result.history[5:]) < design_best / 4
    # The loop keeps its model, and a checkpoint names the family.
    family = importlib.import_module("plain_gp_family")
    assert type(make_strategy("test_plain_gp")) is family.PlainGPStrategy
    assert strategy_identity(family.PlainGPStrategy()) == "test_plain_gp"
    with pytest.warns(UserWarning, match="already holds 12 evaluations"):
        resumed = run()
    assert resumed.values == result.values  # nothing re-evaluated
    # Pools score the family's acquisition; it cannot batch and says so.
    opt = TreeOptimizer(SPACE, seed=1, strategy="test_plain_gp", n_initial=3)
    for params in SPACE.to_dicts(SPACE.sample(3, seed=2)):
        opt.tell(params, objective(params))
    pool = SPACE.sample(20, seed=3)
    chosen = opt.ask(candidates=pool)
    assert any(chosen == params for params in SPACE.to_dicts(pool))
    assert type(opt.last_model).__name__ == "SingleTaskGP"
    with pytest.raises(ValueError, match="'test_plain_gp' cannot choose 2"):
        opt.ask(2)
    # The command line lists it, from the metadata alone.
    from treebo.cli import strategy_names

    assert "test_plain_gp" in strategy_names()


def test_a_family_that_is_not_installed_is_not_found_by_name():
    with pytest.raises(ValueError, match="strategy must be one of"):
        make_strategy("test_plain_gp")
