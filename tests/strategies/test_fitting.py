"""Warm-started fits and their state."""

from __future__ import annotations

import torch

from treebo import TreeOptimizer
from treebo.strategies.fitting import WarmStartFit
from treebo.test_functions import Jenatton


def test_warm_start_state_round_trips_exactly_through_json():
    import json

    problem = Jenatton()
    opt = TreeOptimizer(problem.space, seed=0)
    for _ in range(opt.n_initial + 1):
        params = opt.ask()
        opt.tell(params, problem.objective(params))
    fitter = opt.strategy.model_fit.fitter
    state = json.loads(json.dumps(fitter.state_dict()))
    copy = WarmStartFit()
    copy.load_state_dict(state)
    assert fitter.state.keys() == copy.state.keys()
    for name, value in fitter.state.items():
        assert torch.equal(copy.state[name], value), name
