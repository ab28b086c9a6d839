"""LocalSteps: when a local step is due, its acquisition, and its prior mean; the
failure counts that schedule them."""

from __future__ import annotations

import math

import pytest
import torch

import treebo.add_tree.local_steps as local_steps
from treebo import TreeOptimizer
from treebo.add_tree import LocalStepOptions
from treebo.add_tree.local_steps import (
    Failures,
    LocalSteps,
    LocalStepSettings,
    basin_resolved,
    count_failures,
)
from treebo.strategies.base import is_observed
from treebo.test_functions import Jenatton


def test_failure_counts_follow_the_kinds_of_proposals():
    # Scores to maximize; a failure (-inf) never improves.
    rows = [
        (-1.0, "initial", 0, 0, 0),
        (-2.0, "initial", 0, 0, 0),
        (-3.0, "bo", 1, 0, 0),
        (-0.5, "bo", 0, 0, 0),  # improvement
        (-math.inf, "bo", 1, 0, 0),
        (-0.7, "away", 2, 0, 0),
        (-0.9, "local", 0, 1, 1),  # a local step restarts the global count
        (-0.8, "bo", 1, 1, 1),
        (-0.6, "user", 1, 1, 1),  # neither global nor local nor an improvement
        (-0.6, "local", 0, 2, 2),
        (-0.4, "local", 0, 2, 0),  # a local improvement keeps the basin's count
        (-0.45, "local", 0, 3, 1),
        (-0.3, "bo", 0, 0, 0),  # a global improvement opens a new basin
    ]
    for n in range(1, len(rows) + 1):
        scores = torch.tensor([r[0] for r in rows[:n]])
        kinds = [r[1] for r in rows[:n]]
        assert count_failures(scores, kinds) == Failures(*rows[n - 1][2:])


def test_a_basin_is_resolved_after_patience_failed_local_steps_in_a_row():
    assert not basin_resolved(Failures(0, 5, 2), patience=3)
    assert basin_resolved(Failures(0, 5, 3), patience=3)
    assert not basin_resolved(Failures(0, 9, 9), patience=None)


def initial_observations():
    """P1(a) after the loop's initial design (seed 0)."""
    problem = Jenatton("paper")
    opt = TreeOptimizer(problem.space, seed=0)
    for params in [opt.ask() for _ in range(opt.n_initial)]:
        opt.tell(params, problem.objective(params))
    return opt.observations()


def test_local_steps_are_due_after_patience_failed_global_proposals():
    assert not LocalSteps(LocalStepOptions()).is_due(Failures(9, 0, 0))
    steps = LocalSteps(LocalStepOptions(patience=2))
    assert not steps.is_due(Failures(1, 0, 0)) and steps.is_due(Failures(2, 0, 0))


def test_acquisitions_are_cycled_over_the_local_steps_so_far():
    two = LocalStepSettings(acquisitions=("ucb", "log_ei", "log_ei"))
    steps = LocalSteps(LocalStepOptions(), two)
    kinds = ("initial", "bo", "local", "bo", "local")
    assert steps.next_acquisition(kinds[:2]) == "ucb"
    assert steps.next_acquisition(kinds[:3]) == "log_ei"
    assert steps.next_acquisition(kinds) == "log_ei"
    assert steps.next_acquisition(kinds + ("local",)) == "ucb"
    assert LocalSteps(LocalStepOptions()).next_acquisition(kinds[:3]) == "log_ei"


def test_settings_with_an_unknown_acquisition_are_refused():
    with pytest.raises(ValueError, match="acquisitions must be one of"):
        LocalStepSettings(acquisitions=("ei",))
    with pytest.raises(ValueError, match="beta must be a finite number"):
        LocalStepSettings(beta=-1.0)
    with pytest.raises(ValueError, match="at least one"):
        LocalStepSettings(acquisitions=())


def test_near_means_the_same_path_within_the_radius():
    space = Jenatton().space
    x = space.sample(1, seed=0)[0]
    steps = LocalSteps(LocalStepOptions())
    assert steps.settings.radius == 0.05
    cols = list(space.continuous_columns)
    width = space.bounds[1] - space.bounds[0]
    inside, outside = x.clone(), x.clone()
    inside[cols] += 0.04 * width[cols]
    outside[cols] += 0.06 * width[cols]
    assert steps.is_near(space, inside, x) and not steps.is_near(space, outside, x)
    other_path = space.set_paths(x.unsqueeze(0), torch.tensor([0]))[0]
    if not torch.equal(other_path, x):
        assert not steps.is_near(space, other_path, x)
    assert is_observed(space, inside, torch.stack([x, inside]), 1e-12)
    assert not is_observed(space, outside, torch.stack([x, inside]), 1e-4)


@pytest.mark.parametrize("mean", ["constant", "auto"])
def test_the_step_gets_the_options_and_the_global_posterior_mean(monkeypatch, mean):
    obs = initial_observations()
    model = TreeOptimizer(obs.space, seed=0).strategy.fit(obs)
    seen = []

    def spy(self, space, X, y, acquisition, seed=None, **kwargs):
        seen.append({"acquisition": acquisition, "seed": seed, **kwargs})
        return None

    monkeypatch.setattr(LocalSteps, "step", spy)
    steps = LocalSteps(LocalStepOptions(mean=mean))
    pending = obs.X[:2] + 0.01
    assert steps.candidate(obs, obs.X, obs.y, model, pending) is None
    (kwargs,) = seen
    assert kwargs["X_pending"] is pending
    assert kwargs["seed"] == obs.seed and kwargs["acquisition"] == "ucb"
    if mean == "constant":
        assert kwargs["prior_mean"] is None and kwargs["prior_resolution"] == 0.0
        return
    # The global model's posterior mean, and its noise sd on y's scale.
    prior = kwargs["prior_mean"](obs.X)
    torch.testing.assert_close(prior, model.posterior_mean_variance(obs.X)[0])
    noise = (model.likelihood.noise.max() * model.outcome_transform.stdvs**2).detach()
    assert kwargs["prior_resolution"] == pytest.approx(float(noise.sqrt()))
    with pytest.raises(ValueError, match="need the global model"):
        steps.candidate(obs, obs.X, obs.y, None)


def test_a_step_uses_its_settings(monkeypatch):
    space = Jenatton().space
    X = space.set_paths(space.sample(10, seed=0), torch.zeros(10, dtype=torch.long))
    y = -Jenatton()(X).unsqueeze(-1)
    seen = {}

    def fit_spy(box, X, y, noise_floor, *args):
        seen.update(box=box, noise_floor=noise_floor)
        return "model"

    def acquisition_spy(model, acquisition, beta, best_f):
        seen.update(model=model, beta=beta, best_f=best_f)
        return "acqf"

    def optimize_spy(box, acqf, num_restarts, raw_samples, seed):
        seen.update(acqf=acqf, restarts=(num_restarts, raw_samples), seed=seed)
        return None

    monkeypatch.setattr(local_steps, "fit_local_model", fit_spy)
    monkeypatch.setattr(local_steps, "local_acquisition", acquisition_spy)
    monkeypatch.setattr(local_steps, "optimize_in_box", optimize_spy)

    wider = LocalStepSettings(
        beta=2.0, noise_floor=1e-7, radius=0.1, num_restarts=3, raw_samples=64
    )
    steps = LocalSteps(LocalStepOptions(), wider)
    assert steps.step(space, X, y, "ucb", seed=5) is None
    box = seen["box"]
    width = (space.bounds[1] - space.bounds[0]).to(X)[box.columns]
    assert bool(((box.upper - box.lower) / width <= 0.2 * (1 + 1e-12)).all())
    assert seen["noise_floor"] == 1e-7 and seen["beta"] == 2.0
    assert seen["model"] == "model" and seen["acqf"] == "acqf"
    assert seen["best_f"] == y[box.rows].max()
    assert seen["restarts"] == (3, 64) and seen["seed"] == 5
    with pytest.raises(ValueError, match="radius must be > 0"):
        LocalStepSettings(radius=0.0)


def test_a_step_onto_an_evaluated_point_is_dropped(monkeypatch):
    obs = initial_observations()
    monkeypatch.setattr(LocalSteps, "step", lambda *a, **k: obs.X[2:3])
    steps = LocalSteps(LocalStepOptions(mean="constant"))
    assert steps.candidate(obs, obs.X, obs.y, None) is None


def test_a_step_onto_a_pending_point_is_dropped(monkeypatch):
    obs = initial_observations()
    pending = obs.space.sample(2, seed=9)
    monkeypatch.setattr(LocalSteps, "step", lambda *a, **k: pending[1:])
    steps = LocalSteps(LocalStepOptions(mean="constant"))
    assert steps.candidate(obs, obs.X, obs.y, None, pending) is None
    assert steps.candidate(obs, obs.X, obs.y, None) is not None
