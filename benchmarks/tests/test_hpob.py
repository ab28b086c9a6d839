"""HPO-B's conditional spaces: decoding every pool row, the regret, one run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("bocode")

from benchmarks import hpob  # noqa: E402
from benchmarks.harness import load_records  # noqa: E402
from benchmarks.problems.hpob import (  # noqa: E402
    COLUMNS,
    TEST_TASKS,
    HPOBTask,
    _tables,
    decode,
    encode,
    space_of,
)

#: One task per conditional space (the largest pools of SVM and XGBoost).
ONE_PER_SPACE = ["5527_9914", "5891_3492", "5906_3918", "5971_43", "6767_146065"]


@pytest.mark.parametrize("key", ONE_PER_SPACE)
def test_every_pool_row_is_a_configuration_of_its_space_and_back(key):
    space_id = key.split("_")[0]
    table = _tables()[key][:, :-1]
    space = space_of(space_id)
    configs = [decode(space_id, row) for row in table]
    encoded = space.to_tensor(configs)  # validates every configuration
    assert encoded.shape == (table.shape[0], space.dim)
    assert all(space.validate(c) == c for c in configs[:500])
    back = np.stack([encode(space_id, c) for c in space.to_dicts(encoded)])
    np.testing.assert_array_equal(back, table)


def test_the_branches_switch_the_parameters_hpob_marks_missing():
    svm = decode("5527", np.array([0.5, 0.0, 1.0, 0.4, 0.0, 0.0, 0.0, 1.0]))
    assert svm == {
        "kernel": "polynomial", "cost": 0.5, "degree_set": "tuned", "degree": 0.4
    }  # fmt: skip
    linear = decode("5891", np.array([0.2, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]))
    assert linear == {"kernel": "linear", "cost": 0.2}
    with pytest.raises(ValueError, match="gamma is set on a branch"):
        decode("5527", np.array([0.2, 0.3, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]))
    names = COLUMNS["5906"]
    row = np.zeros(len(names))
    row[names.index("booster.ohe._gblinear")] = 1.0
    for name in ("max_depth", "min_child_weight", "colsample_bytree"):
        row[names.index(f"{name}.na")] = 1.0
    with pytest.raises(ValueError, match="colsample_bylevel is set"):
        decode("5906", row)


def test_the_test_tasks_are_hpobs_26_conditional_ones():
    assert len(TEST_TASKS) == 26 and len(set(TEST_TASKS)) == 26
    assert {s for s, _ in TEST_TASKS} == set(COLUMNS)


def test_normalized_regret_matches_a_hand_computation():
    task = HPOBTask("5906", "3918")
    low, high = float(task.accuracy.min()), float(task.accuracy.max())
    trace = [low, high - 0.5 * (high - low), low, high]
    expected = [1.0, 0.5, 0.5, 0.0]
    torch.testing.assert_close(
        task.normalized_regret(torch.tensor(trace, dtype=torch.float64)),
        torch.tensor(expected, dtype=torch.float64),
    )
    record = {"values": trace, "pool_min": low, "pool_max": high}
    np.testing.assert_allclose(hpob.normalized_regret(record), expected)
    # HPO-B's "after k trials" counts the trials beyond the 5 initial rows.
    long = {**record, "values": [low] * 5 + trace}
    assert [hpob.regret_after(long, k) for k in (1, 2, 4)] == [1.0, 0.5, 0.0]
    assert np.isnan(hpob.regret_after(long, 5))


def test_a_short_run_evaluates_distinct_pool_rows_from_the_shared_start():
    task = HPOBTask("5906", "3918")
    runs = {m: hpob.run_task(task, m, seed=1, budget=8) for m in ("treebo", "random")}
    for record in runs.values():
        assert len(set(record["rows"])) == 8
        assert record["rows"][:5] == hpob.initial_rows(task, 1)
        assert record["values"] == [float(task.accuracy[i]) for i in record["rows"]]
    lines = hpob.table(list(runs.values()), checkpoints=(1, 3))
    assert lines[2].startswith("| random (1 tasks) | 1 |")


def test_the_plain_addtree_loop_scores_the_pool_and_repeats_from_its_seed():
    task = HPOBTask("5906", "9971")
    record = hpob.run_task(task, "addtree_logei", seed=2, budget=12)
    assert len(set(record["rows"])) == 12
    # HPO-B's 5 rows, topped up to 10 random ones, then 2 proposals.
    assert record["rows"][:5] == hpob.initial_rows(task, 2)
    assert (
        hpob.run_task(task, "addtree_logei", seed=2, budget=12)["rows"]
        == (record["rows"])
    )


def test_lockstep_runs_write_the_rows_of_the_runs_one_by_one(tmp_path):
    from benchmarks.run import main as run

    tasks = "hpob_5906_3918,hpob_5906_9971"
    common = ["hpob", "--methods", "treebo", "--seeds", "0-1", "--budget", "8"]
    run([*common, "--problems", tasks, "--out", str(tmp_path / "alone.jsonl")])
    batch = [*common, "--problems", tasks, "--out", str(tmp_path / "batch.jsonl")]
    run([*batch, "--lockstep"])

    def rows(name: str) -> dict:
        records = load_records([tmp_path / name])
        return {(r["problem"], r["seed"]): r for r in records}

    alone, batch = rows("alone.jsonl"), rows("batch.jsonl")
    assert len(alone) == 4 and alone.keys() == batch.keys()
    assert all(batch[k]["rows"] == alone[k]["rows"] for k in alone)
    assert {r["lockstep_runs"] for r in batch.values()} == {4}


def test_the_lockstep_timing_records_both_ways_and_their_rows(tmp_path):
    from benchmarks.perf.lockstep import main as lockstep
    from benchmarks.perf.tables import lockstep as table

    out = tmp_path / "lockstep.jsonl"
    lockstep(["--space", "5906", "--seeds", "0", "--budget", "6", "--out", str(out)])
    (record,) = load_records([out])
    assert record["runs"] == 2 and record["same_rows"] == 2
    assert record["evaluations"] > 0 and record["mean_batch"] == 2.0
    assert record["lockstep_s"] > 0 and record["alone_s"] > 0
    assert "| 5906 | 2 x 6 |" in table([record])
    with pytest.raises(SystemExit, match="no HPO-B test task"):
        lockstep(["--space", "1234", "--out", str(out)])


def test_each_lockstep_batch_reports_its_runs_spaces_and_wall_time():
    def record(problem, seconds, size, date="2026-11-28"):
        return {
            "method": "treebo",
            "problem": problem,
            "date": date,
            "machine": "x86_64 1t",
            "lockstep_runs": size,
            "wall_seconds": seconds,
        }

    records = [
        record("hpob_5527_31", 600.0, 2),
        record("hpob_5971_43", 3204.0, 2),
        record("hpob_6767_31", 120.0, 1, date="2026-11-27"),
        {"method": "random", "problem": "hpob_5527_31", "wall_seconds": 1.0},
    ]
    assert hpob.lockstep_walls(records) == [
        "Wall time of the runs made in lockstep, one process per batch:",
        "- `treebo` in lockstep, 1 of 1 runs (spaces 6767): 2.0 min in one process "
        "(x86_64 1t, 2026-11-27).",
        "- `treebo` in lockstep, 2 of 2 runs (spaces 5527, 5971): 53.4 min in one "
        "process (x86_64 1t, 2026-11-28).",
    ]
    assert hpob.lockstep_walls(records[3:]) == []


def test_a_task_is_a_problem_named_by_its_space_and_dataset():
    from benchmarks.problems.protocol import Problem

    task = hpob.task_of("hpob_5906_3918")
    assert isinstance(task, Problem) and hpob.task_of("hpob_5906_3918") is task
    best = task.space.to_dict(task.pool[int(task.accuracy.argmax())])
    assert task.objective(best) == task.optimal_value
    with pytest.raises(ValueError, match="not an HPO-B test task"):
        hpob.task_of("hpob_1_2")
