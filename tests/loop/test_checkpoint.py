"""Checkpoints: atomic writes after every evaluation, versions, refusals."""

from __future__ import annotations

import json

import pytest

from treebo import TreeOptimizer, minimize
from treebo.loop import CHECKPOINT_VERSION, CheckpointMismatchError
from treebo.strategies import AddTreeOptions
from treebo.test_functions import Jenatton, generalized_jenatton_space


class Killed(KeyboardInterrupt):
    """Stands in for the process being killed."""


def test_a_killed_run_keeps_every_finished_evaluation(tmp_path):
    problem = Jenatton()
    path = tmp_path / "run.json"
    seen = []

    def dies_after_seven(params):
        if len(seen) == 7:
            raise Killed
        seen.append(params)
        return problem.objective(params)

    with pytest.raises(Killed):
        minimize(dies_after_seven, problem.space, budget=10, seed=3, checkpoint=path)
    saved = json.loads(path.read_text())
    assert saved["version"] == CHECKPOINT_VERSION
    assert [t["params"] for t in saved["history"]] == seen
    # The strategy's state (the warm start of the next fit) is saved too.
    assert saved["strategy_state"]["hyperparameters"]
    assert not list(tmp_path.glob("*.tmp"))
    result = minimize(
        problem.objective, problem.space, budget=10, seed=3, checkpoint=path
    )
    assert [t.params for t in result.history[:7]] == seen
    assert len(json.loads(path.read_text())["history"]) == 10


@pytest.mark.parametrize(
    "change, named",
    [
        ({"seed": 1}, "seed"),
        ({"model": "add_tree_ucb"}, "model"),
        ({"options": AddTreeOptions(noise_floor=1e-4)}, "options"),
        ({"maximize": True}, "maximize"),
        ({"n_initial": 6}, "n_initial"),
    ],
)
def test_a_checkpoint_of_other_settings_is_refused(tmp_path, change, named):
    problem = Jenatton()
    path = tmp_path / "run.json"
    minimize(problem.objective, problem.space, budget=2, seed=0, checkpoint=path)
    settings = {"seed": 0, **change}
    with pytest.raises(CheckpointMismatchError, match=named):
        TreeOptimizer(problem.space, checkpoint=path, **settings)
    TreeOptimizer(problem.space, seed=0, checkpoint=path)  # the same run is fine


def test_a_checkpoint_of_another_space_or_not_a_checkpoint_is_refused(tmp_path):
    path = tmp_path / "run.json"
    problem = Jenatton()
    minimize(problem.objective, problem.space, budget=2, seed=0, checkpoint=path)
    with pytest.raises(CheckpointMismatchError, match="space"):
        TreeOptimizer(generalized_jenatton_space(3), seed=0, checkpoint=path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        TreeOptimizer(problem.space, checkpoint=path)
    path.write_text('{"version": 2}')
    with pytest.raises(ValueError, match="not a treebo checkpoint"):
        TreeOptimizer(problem.space, checkpoint=path)
    path.write_text('{"version": 7, "history": []}')
    with pytest.raises(ValueError, match="version 7"):
        TreeOptimizer(problem.space, checkpoint=path)


def test_a_version_1_checkpoint_resumes_its_history_with_a_warning(tmp_path):
    problem = Jenatton()
    params = problem.space.to_dicts(problem.space.sample(3, seed=0))
    history = [
        {"index": i, "params": p, "value": problem.objective(p), "kind": "initial"}
        for i, p in enumerate(params)
    ]
    path = tmp_path / "old.json"
    payload = {"version": 1, "maximize": False, "history": history}
    path.write_text(json.dumps({**payload, "parameters": ["x1"]}))
    with pytest.raises(CheckpointMismatchError, match="parameters"):
        TreeOptimizer(problem.space, checkpoint=path)
    names = problem.space.parameter_names
    path.write_text(json.dumps({**payload, "parameters": names}))
    with pytest.warns(RuntimeWarning, match="version 1"):
        opt = TreeOptimizer(problem.space, checkpoint=path)
    assert [t.params for t in opt.history] == params
