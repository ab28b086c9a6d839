"""The Add-Tree strategies: local steps, redirects off resolved basins, repeats."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import treebo.strategies.add_tree as add_tree
from treebo import TreeOptimizer
from treebo.kernels import AddTreeKernelOptions
from treebo.optim.tree_optimize import TreeCandidate
from treebo.strategies import (
    AddTreeOptions,
    AddTreeStrategy,
    AddTreeUCBOptions,
    LocalStepOptions,
    Observations,
)
from treebo.strategies.fitting import WarmStartFit
from treebo.test_functions import Jenatton


def observations(space, X, values, kinds) -> Observations:
    y = -torch.tensor(values, dtype=torch.float64).unsqueeze(-1)
    return Observations(
        space=space,
        X=X,
        y=y,
        failed=torch.zeros(len(values), dtype=torch.bool),
        kinds=tuple(kinds),
        X_pending=torch.empty(0, space.dim, dtype=torch.float64),
        seed=0,
        n_initial=4,
    )


@pytest.fixture
def rigged(monkeypatch):
    """A UCB strategy whose acquisition prefers the incumbent's own point, a
    fake local step, and every path's candidate."""
    space = Jenatton("paper").space
    X = space.sample(4, seed=0)
    X = space.set_paths(X, torch.arange(4))
    own = 0  # the incumbent (lowest value) is on path 0
    rows = space.set_paths(space.sample(4, seed=3), torch.arange(4))
    rows[own] = X[own]
    values = torch.tensor([10.0, 3.0, 1.0, 2.0], dtype=torch.float64)
    fake = TreeCandidate(rows[own : own + 1], values[own], own, values, rows)
    strategy = add_tree.AddTreeUCBStrategy(AddTreeUCBOptions(basin_patience=1))
    monkeypatch.setattr(strategy, "fit", lambda obs: None)
    monkeypatch.setattr(strategy, "optimize_acquisition", lambda *a: fake)
    local = {"step": X[1:2] * 0 + rows[own] + 0.01}
    monkeypatch.setattr(strategy.local, "candidate", lambda *a: local["step"])
    return space, X, rows, strategy, local


def test_a_near_proposal_becomes_a_local_step_while_the_basin_is_open(rigged):
    space, X, rows, strategy, _ = rigged
    obs = observations(space, X, [0.1, 0.5, 0.6, 0.7], ["initial"] * 4)
    proposal = strategy.propose(obs)
    assert proposal.kind == "local"


def test_a_resolved_basin_sends_the_proposal_to_the_best_other_path(rigged):
    space, X, rows, strategy, local = rigged
    # One failed local step resolves the basin (basin_patience=1).
    X5 = torch.cat([X, X[:1] + 0.001])
    obs = observations(
        space, X5, [0.1, 0.5, 0.6, 0.7, 0.2], ["initial"] * 4 + ["local"]
    )
    proposal = strategy.propose(obs)
    assert proposal.kind == "away"
    assert torch.equal(proposal.candidate, rows[1])  # second-best path value
    # LogEI never redirects: the same history gives a local step.
    logei = AddTreeStrategy()
    assert not logei.redirect(add_tree.count_failures(obs.scores, obs.kinds))
    # Without a local step, a proposal that repeats an observation gives way
    # to the best path candidate not yet evaluated.
    local["step"] = None
    strategy.options = dataclasses.replace(strategy.options, basin_patience=None)
    proposal = strategy.propose(obs)
    assert proposal.kind == "bo" and torch.equal(proposal.candidate, rows[1])


def test_options_are_checked_and_name_the_parameter():
    with pytest.raises(ValueError, match="noise_floor"):
        AddTreeOptions(noise_floor=0.0)
    with pytest.raises(ValueError, match="fit_criterion"):
        AddTreeOptions(fit_criterion="map")
    with pytest.raises(ValueError, match="num_restarts"):
        AddTreeOptions(num_restarts=0)
    with pytest.raises(TypeError, match="kernel must be AddTreeKernelOptions"):
        AddTreeOptions(kernel={"vertex_bias": "all"})
    with pytest.raises(TypeError, match="local must be LocalStepOptions"):
        AddTreeOptions(local=True)
    with pytest.raises(ValueError, match="path_selection"):
        AddTreeUCBOptions(path_selection="max")
    with pytest.raises(ValueError, match="basin_patience"):
        AddTreeUCBOptions(basin_patience=0)
    with pytest.raises(ValueError, match="inherit_ancestors"):
        AddTreeUCBOptions(kernel=AddTreeKernelOptions(inherit_ancestors=True))
    with pytest.raises(ValueError, match="inherit_ancestors must be a bool"):
        AddTreeKernelOptions(inherit_ancestors="yes")
    with pytest.raises(ValueError, match="acquisitions must be one of"):
        LocalStepOptions(acquisitions=("ei",))
    with pytest.raises(ValueError, match="beta must be a finite number"):
        LocalStepOptions(beta=-1.0)
    with pytest.raises(ValueError, match="mean must be one of"):
        LocalStepOptions(mean="global")
    with pytest.raises(ValueError, match="radius"):
        LocalStepOptions(radius=0.0)
    with pytest.raises(ValueError, match="vertex_bias"):
        AddTreeKernelOptions(vertex_bias="leaves")
    with pytest.raises(ValueError, match="share_outputscales"):
        AddTreeKernelOptions(share_outputscales="siblings")
    # Each strategy's defaults are its own type's.
    assert AddTreeOptions().kernel.vertex_bias == "all"
    assert AddTreeUCBOptions().kernel.vertex_bias == "none"
    assert AddTreeUCBOptions().local.mean == "constant"


def test_warm_start_state_round_trips_exactly_through_json():
    import json

    problem = Jenatton()
    opt = TreeOptimizer(problem.space, seed=0)
    for _ in range(opt.n_initial + 1):
        params = opt.ask()
        opt.tell(params, problem.objective(params))
    fitter = opt.strategy.fitter
    state = json.loads(json.dumps(fitter.state_dict()))
    copy = WarmStartFit()
    copy.load_state_dict(state)
    assert fitter.state.keys() == copy.state.keys()
    for name, value in fitter.state.items():
        assert torch.equal(copy.state[name], value), name
