"""Checkpoints: an append-only journal, torn tails, old formats, refusals."""

from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.fault_injection import killed_run
from tests.loop.journal import read_journal
from treebo import TreeOptimizer, minimize
from treebo.add_tree import AddTreeOptions, AddTreeStrategy
from treebo.loop import (
    CHECKPOINT_VERSION,
    CheckpointInUseError,
    CheckpointMismatchError,
    CheckpointVersionError,
)
from treebo.loop.checkpoint import checkpoint_header, read_checkpoint
from treebo.space import Choice, Real, TreeSpace, Vertex
from treebo.test_functions import Jenatton, generalized_jenatton_space

DATA = Path(__file__).parent / "data"


class Killed(KeyboardInterrupt):
    """Stands in for the process being killed."""


def test_a_killed_run_keeps_every_finished_evaluation(tmp_path):
    problem = Jenatton()
    path = tmp_path / "run.json"
    seen = []
    dying = [True]

    def dies_after_seven(params):
        if dying[0] and len(seen) == 7:
            raise Killed
        seen.append(params)
        return problem.objective(params)

    with pytest.raises(Killed):
        minimize(dies_after_seven, problem.space, budget=10, seed=3, checkpoint=path)
    header, trials, states = read_journal(path)
    assert header["version"] == CHECKPOINT_VERSION
    assert len(trials) == 7
    # The strategy's state (the warm start of the next fit) is saved too.
    assert states and states[-1]["hyperparameters"]
    dying[0] = False  # the same objective, resumed
    result = minimize(
        dies_after_seven, problem.space, budget=10, seed=3, checkpoint=path
    )
    assert [t.params for t in result.history[:7]] == seen[:7]
    assert len(read_journal(path)[1]) == 10


def test_tell_appends_one_line_and_rewrites_nothing(tmp_path):
    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    opt = TreeOptimizer(problem.space, seed=0, n_initial=4, checkpoint=path)
    sizes = []
    for _ in range(4):
        before = path.read_bytes() if path.exists() else b""
        params = opt.ask()
        opt.tell(params, problem.objective(params))
        after = path.read_bytes()
        assert after.startswith(before)  # append-only
        sizes.append(after.count(b"\n") - before.count(b"\n"))
    assert sizes == [1, 1, 1, 1]  # the header is written by the constructor


def test_a_last_line_cut_short_is_dropped_with_a_warning(tmp_path):
    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    minimize(problem.objective, problem.space, budget=3, seed=0, checkpoint=path)
    with open(path, "a") as fh:
        fh.write('{"trial": {"index": 3, "params": {"x1"')  # killed mid-write
    with pytest.warns(RuntimeWarning, match="incomplete"):
        opt = TreeOptimizer(problem.space, seed=0, checkpoint=path)
    assert len(opt.history) == 3
    opt.close()
    _, trials, _ = read_journal(path)  # compacted: the torn line is gone
    assert len(trials) == 3
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "{broken", *lines[1:]]) + "\n")
    with pytest.raises(ValueError, match="line 2"):
        TreeOptimizer(problem.space, seed=0, checkpoint=path)


def test_labels_json_cannot_hold_round_trip(tmp_path):
    shape = Choice("shape", [(1, 2), (3, 4)])
    space = TreeSpace(Vertex([Real("x", 0, 1)], [shape, Choice("n", [1, 2])]))
    path = tmp_path / "run.jsonl"
    opt = TreeOptimizer(space, seed=0, checkpoint=path)
    told = {"x": np.float32(0.25), "shape": (3, 4), "n": np.int64(2)}
    trial = opt.tell(told, np.float64(1.5))
    assert trial.params == {"x": 0.25, "shape": (3, 4), "n": 2}
    assert type(trial.params["n"]) is int and type(trial.value) is float
    resumed = TreeOptimizer(space, seed=0, checkpoint=path)
    assert resumed.history[0].params == trial.params
    assert type(resumed.history[0].params["shape"]) is tuple
    assert not list(tmp_path.glob("*.tmp"))


def test_a_proposal_never_told_leaves_no_state_to_resume_from(tmp_path):
    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    options = AddTreeOptions(num_restarts=2, raw_samples=32, local=None)
    kwargs = dict(seed=2, n_initial=4, checkpoint=path)
    opt = TreeOptimizer(problem.space, strategy=AddTreeStrategy(options), **kwargs)
    for _ in range(6):
        params = opt.ask()
        opt.tell(params, problem.objective(params))
    told = opt.strategy.state_dict()
    opt.ask()  # fits again and journals the new state; then the run dies
    assert opt.strategy.state_dict() != told
    assert "strategy_state" in json.loads(path.read_text().splitlines()[-1])
    resumed = TreeOptimizer(problem.space, strategy=AddTreeStrategy(options), **kwargs)
    assert resumed.strategy.state_dict() == told
    # ... so the re-made proposal is the one the interrupted run made.
    assert resumed.ask() == opt.pending[0]


def test_a_checkpoint_of_an_earlier_format_is_refused_naming_the_version(tmp_path):
    # Written by treebo before the family layout (format version 3): its
    # options have fields that no longer exist, so it cannot resume exactly.
    path = tmp_path / "run.jsonl"
    shutil.copy(DATA / "version3.jsonl", path)
    before = path.read_text()
    problem = Jenatton()
    with pytest.raises(CheckpointVersionError, match="format version 3.*version 4"):
        TreeOptimizer(problem.space, seed=0, n_initial=3, checkpoint=path)
    assert path.read_text() == before  # left as it was


@pytest.mark.parametrize(
    "change, named",
    [
        ({"seed": 1}, "seed"),
        ({"strategy": "add_tree_ucb"}, 'strategy: checkpoint "add_tree"'),
        (
            {"strategy": AddTreeStrategy(AddTreeOptions(noise_floor=1e-4))},
            r"options\.noise_floor: checkpoint null, this run 0\.0001",
        ),
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


def test_another_bound_is_named_by_its_parameter_in_its_units(tmp_path):
    from treebo.space import Integer, Real, TreeSpace, Vertex

    def space(high):
        return TreeSpace(Vertex([Real("C", 1e-2, high, log_scale=True),
                                 Integer("n", 1, 9)]))  # fmt: skip

    path = tmp_path / "run.jsonl"
    TreeOptimizer(space(100), seed=0, checkpoint=path).close()
    named = "C: high 100 in the checkpoint, 1000 in this run"
    with pytest.raises(CheckpointMismatchError, match=named):
        TreeOptimizer(space(1000), seed=0, checkpoint=path)


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
    path.write_text('{"format": "treebo-checkpoint", "version": 7}')
    with pytest.raises(CheckpointVersionError, match="version 7"):
        TreeOptimizer(problem.space, checkpoint=path)


@pytest.mark.parametrize("mode", ["random", "returned"])
def test_a_killed_process_resumes_with_every_finished_evaluation(tmp_path, mode):
    # A subprocess killed with SIGKILL at a random moment, or 5 ms after an
    # evaluation has returned (its journal line is written about 0.1 ms after
    # the return), twice, then resumed to the end.
    record = killed_run(
        tmp_path, mode, kills=2, seed=0, budget=8, window=(0.5, 3), grace=0.005
    )
    assert record["kills"] >= 1 and record["told"] == 8
    assert record["lost"] == 0 and record["repeated"] == 0


def _open_in_another_process(space_seed_path, queue):
    path = space_seed_path
    try:
        TreeOptimizer(Jenatton().space, seed=0, checkpoint=path)
        queue.put("opened")
    except CheckpointInUseError as err:
        queue.put(f"refused: {err}")


def test_a_second_process_on_a_checkpoint_is_refused_before_it_evaluates(tmp_path):
    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    opt = TreeOptimizer(problem.space, seed=0, checkpoint=path)
    opt.tell(opt.ask(), 1.0)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    other = context.Process(target=_open_in_another_process, args=(path, queue))
    other.start()
    answer = queue.get(timeout=120)
    other.join()
    assert answer.startswith("refused") and "in use by another process" in answer
    assert len(read_journal(path)[1]) == 1  # the other process wrote nothing
    opt.close()  # released: another process may now open it
    other = context.Process(target=_open_in_another_process, args=(path, queue))
    other.start()
    assert queue.get(timeout=120) == "opened"
    other.join()


def test_a_newer_optimizer_in_the_same_process_takes_the_checkpoint_over(tmp_path):
    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    old = TreeOptimizer(problem.space, seed=0, checkpoint=path)
    old.tell(old.ask(), 1.0)
    new = TreeOptimizer(problem.space, seed=0, checkpoint=path)  # a re-run cell
    assert len(new.history) == 1
    with pytest.raises(CheckpointInUseError, match="newer optimizer"):
        old.tell(old.ask(), 2.0)
    new.tell(new.ask(), 3.0)
    assert [
        t.value for t in TreeOptimizer(problem.space, seed=0, checkpoint=path).history
    ] == [1.0, 3.0]


def test_read_checkpoint_takes_the_runs_direction_and_refuses_other_files(tmp_path):
    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    with TreeOptimizer(problem.space, seed=0, maximize=True, checkpoint=path) as opt:
        for value in (1.0, 3.0, 2.0):
            opt.tell(opt.ask(), value)
    result = read_checkpoint(path, problem.space)  # no lock needed, none taken
    assert result.best_value == 3.0 and len(result.history) == 3
    assert checkpoint_header(path)["maximize"] is True
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    with pytest.raises(ValueError, match="not a treebo checkpoint"):
        read_checkpoint(other, problem.space)
    with pytest.raises(CheckpointMismatchError, match="space"):
        read_checkpoint(path, generalized_jenatton_space(3))


def _objective_v1(params):
    return sum(v for v in params.values() if isinstance(v, float))


def _objective_v2(params):  # the same name once edited: see the test below
    return 2 * sum(v for v in params.values() if isinstance(v, float))


def test_an_edited_objective_or_another_pool_does_not_resume_a_run(tmp_path):
    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    minimize(_objective_v1, problem.space, budget=2, seed=0, checkpoint=path)
    edited = _objective_v2
    edited.__qualname__ = _objective_v1.__qualname__  # same name, other source
    try:
        with pytest.raises(CheckpointMismatchError, match="the objective changed"):
            minimize(edited, problem.space, budget=3, seed=0, checkpoint=path)
    finally:
        edited.__qualname__ = "_objective_v2"
    with pytest.raises(CheckpointMismatchError, match="another checkpoint path"):
        minimize(_objective_v2, problem.space, budget=3, seed=0, checkpoint=path)
    assert len(minimize(_objective_v1, problem.space, budget=3, seed=0,
                        checkpoint=path).history) == 3  # fmt: skip
    pool = problem.space.sample(20, seed=1)
    pooled = tmp_path / "pool.jsonl"
    minimize(_objective_v1, problem.space, budget=2, seed=0, checkpoint=pooled,
             candidates=pool)  # fmt: skip
    with pytest.raises(CheckpointMismatchError, match="the candidate pool changed"):
        minimize(_objective_v1, problem.space, budget=3, seed=0, checkpoint=pooled,
                 candidates=pool[:19])  # fmt: skip


def test_a_pool_in_another_row_order_resumes_its_run(tmp_path):
    problem = Jenatton()
    pool = problem.space.sample(20, seed=1)
    path = tmp_path / "run.jsonl"
    minimize(_objective_v1, problem.space, budget=2, seed=0, checkpoint=path,
             candidates=pool)  # fmt: skip
    shuffled = pool[torch.randperm(20, generator=torch.Generator().manual_seed(0))]
    result = minimize(_objective_v1, problem.space, budget=3, seed=0,
                      checkpoint=path, candidates=shuffled)  # fmt: skip
    assert len(result.history) == 3


def test_a_variant_strategys_checkpoint_does_not_resume_under_the_registered_one(
    tmp_path,
):
    from treebo.add_tree import AddTreeStrategy

    class Variant(AddTreeStrategy):
        """A behaviour change under the registered name."""

    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    TreeOptimizer(problem.space, strategy=Variant(), seed=0, checkpoint=path).close()
    refused = r"strategy: checkpoint .add_tree \(tests"
    with pytest.raises(CheckpointMismatchError, match=refused):
        TreeOptimizer(problem.space, seed=0, checkpoint=path)
    TreeOptimizer(problem.space, strategy=Variant(), seed=0, checkpoint=path).close()
