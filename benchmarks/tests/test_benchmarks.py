"""Benchmark helpers: method options and the paired seed-by-seed summary."""

from __future__ import annotations

import importlib
import json
import math

import numpy as np
import pytest
import torch

from benchmarks import harness, report
from benchmarks.experiments.median_ranking import lowest_median_probability
from benchmarks.methods import botorch_peers, method_names, run_method
from benchmarks.methods.treebo import PRESETS
from benchmarks.perf.parallel_workers import (
    slow_objective,
    table,
    time_to_target_table,
)
from benchmarks.problems import PROBLEMS, make_problem
from benchmarks.stats import (
    group_runs,
    log10_regret_curve,
    on_wrong_branch,
    paired_counts,
    parse_seeds,
    sign_test,
)
from benchmarks.suites import SUITES
from treebo import TreeOptimizer
from treebo.test_functions import Jenatton


def test_sign_test_matches_the_binomial_tail():
    # Brute force: P(|W - n/2| >= |w - n/2|) under Binomial(n, 1/2).
    for wins, losses in [(0, 0), (9, 1), (5, 5), (0, 10), (13, 7), (1, 2)]:
        n = wins + losses
        dev = abs(wins - n / 2)
        brute = sum(math.comb(n, k) for k in range(n + 1) if abs(k - n / 2) >= dev)
        assert sign_test(wins, losses) == pytest.approx(min(1.0, brute / 2**n))
    assert sign_test(10, 0) == pytest.approx(2 / 1024)


def test_paired_counts_compare_common_seeds_at_the_checkpoint():
    inf = -np.inf
    base = {0: np.array([-1.0, -2.0]), 1: np.array([-1.0, inf]), 2: np.array([0.0])}
    other = {0: np.array([-1.0, -3.0]), 1: np.array([-2.0, inf]), 3: np.array([0, 0])}
    # Seed 0: lower at 2; seed 1: equal (both exact) at 2; seeds 2, 3 not shared.
    assert paired_counts(base, other, 2) == (1, 1, 0)
    assert paired_counts(base, other, 1) == (1, 1, 0)
    assert paired_counts(other, base, 1) == (0, 1, 1)
    assert paired_counts(base, other, 3) == (0, 0, 0)
    # Round-off between machines is a tie, not a win.
    close = {0: np.array([-1.0 - 1e-9, -2.0 + 1e-5]), 1: np.array([-1.01, inf])}
    assert paired_counts(base, close, 2) == (0, 2, 0)
    assert paired_counts(base, close, 1) == (1, 1, 0)
    assert paired_counts(base, close, 1, tie=0.0) == (2, 0, 0)


def test_lowest_median_probability_is_one_for_a_dominating_method_and_shares_ties():
    rng = np.random.default_rng(0)
    values = {
        "low": np.array([0.1, 0.2, 0.15]),
        "high": np.array([0.3, 0.4, 0.35]),
        "same": np.array([0.3, 0.4, 0.35]),
    }
    prob = lowest_median_probability(values, 500, rng)
    assert prob["low"] == 1.0 and prob["high"] == 0.0 and prob["same"] == 0.0
    # Two identical constant methods are both lowest in every resample.
    tied = {"a": np.full(4, 0.2), "b": np.full(4, 0.2), "c": np.full(4, 0.5)}
    prob = lowest_median_probability(tied, 100, rng)
    assert prob == {"a": 1.0, "b": 1.0, "c": 0.0}
    # Overlapping seeds: the probabilities are strictly between 0 and 1.
    mixed = {"a": np.array([0.1, 0.3, 0.5]), "b": np.array([0.2, 0.3, 0.4])}
    prob = lowest_median_probability(mixed, 2000, rng)
    assert 0.0 < prob["a"] < 1.0 and 0.0 < prob["b"] < 1.0


def test_parse_seeds():
    assert parse_seeds("0-3") == {0, 1, 2, 3}
    assert parse_seeds("0-1,7,9-10") == {0, 1, 7, 9, 10}


def test_parallel_workers_table_pairs_seeds_with_one_worker():
    def record(workers, seed, seconds, best):
        return {
            "method": f"workers{workers}",
            "seed": seed,
            "run_seconds": seconds,
            "values": [None, best + 1.0, best],
            "optimal_value": 0.0,
        }

    records = [
        record(1, 0, 100.0, 1e-3),
        record(1, 1, 80.0, 1e-5),
        record(3, 0, 40.0, 1e-4),
        record(3, 1, 20.0, 1e-5),
        record(12, 0, 10.0, 1e-2),
    ]
    rows = table(records, 3).splitlines()[2:]
    # Workers sort numerically; ratios are paired seed by seed (2.5x and 4x).
    assert [row.split("|")[1].strip() for row in rows] == ["1", "3", "12"]
    assert rows[1].split("|")[3:7] == [" 30 ", " 3.25x ", " -4.50 ", " 1 / 1 / 0 (1) "]
    assert rows[2].split("|")[4:7] == [" 10.00x ", " -2.00 ", " 0 / 0 / 1 (1) "]


def test_time_to_target_reads_when_more_workers_first_reach_one_workers_best():
    one = {
        "method": "dask1",
        "seed": 0,
        "values": [3.0, 2.0, 1.0, 0.5],
        "told_seconds": [10.0, 20.0, 30.0, 40.0],
        "run_seconds": 41.0,
        "optimal_value": 0.0,
    }
    eight = {
        "method": "dask8",
        "seed": 0,
        "values": [2.5, 0.9, 0.4, 0.1, 0.05],
        "told_seconds": [2.0, 4.0, 5.0, 6.0, 7.0],
        "run_seconds": 8.0,
        "optimal_value": 0.0,
    }
    # One worker's best after 3 evaluations is 1.0 at 30 s; eight workers
    # reach it at their 2nd evaluation, 4 s: 0.13 of the time.
    row = time_to_target_table([one, eight], 3).splitlines()[2]
    assert row.split("|")[1:7] == [" 8 ", " 0 ", " 0.00 ", " 30 ", " 4 (2) ", " 0.13 "]
    # The first table reads the time of the budget-th evaluation.
    rows = table([one, eight], 3).splitlines()[2:]
    assert rows[1].split("|")[3:5] == [" 5 ", " 6.00x "]
    never = dict(eight, values=[5.0] * 5)
    assert "not reached in 5" in time_to_target_table([one, never], 3)


def test_slow_objective_waits_in_proportion_and_returns_the_value(monkeypatch):
    slept = []
    monkeypatch.setattr("benchmarks.perf.parallel_workers.time.sleep", slept.append)
    problem = Jenatton()
    configs = problem.space.to_dicts(problem.space.sample(20, seed=0))
    objective = slow_objective(problem, 2.0)
    assert [objective(c) for c in configs] == [problem.objective(c) for c in configs]
    assert all(1.0 <= s <= 3.0 for s in slept) and max(slept) - min(slept) > 0.5
    objective(configs[0])
    assert slept[-1] == slept[0]  # the same configuration waits as long


def test_validation_problems_reach_their_optimum_and_no_sample_beats_it():
    from benchmarks.problems.validation import VALIDATION_PROBLEMS

    optima = {
        "v_mislead": {"branch": "wide", "w0": 0.7, "w1": 0.25, "w2": 0.6, "w3": 0.4},
        "v_mislead_2d": {"branch": "wide", "w0": 0.7, "w1": 0.25},
        "v_wide": {"leaf": 5, "a5": math.sin(5), "b5": math.cos(10) * 0.8},
        "v_flags": {
            "base": 0.3,
            "f0": "on",
            "r0": 0.8,
            "f1": "on",
            "r1": 0.2,
            "f2": "off",
        },
        "v_shared": {"s": 0.7, "c": 1, "v": 0.5, "e": 0, "x2": 0.2},
        "v_kinks": {"x1": 0, "r8": 0.0, "x2": 0, "x4": 0.3},
        "v_offcentre": {"x1": 0, "r8": 0.0, "x2": 0, "x4": 0.55},
    }
    for name, make in VALIDATION_PROBLEMS.items():
        problem = make()
        if name in optima:
            value = problem.true_value(problem.space.validate(optima[name]))
            assert value == pytest.approx(problem.optimal_value, abs=1e-12), name
            assert optima[name][problem.root_choice] == problem.best_branch, name
        X = problem.space.sample(2000, seed=3)
        values = [problem.true_value(c) for c in problem.space.to_dicts(X)]
        assert min(values) >= problem.optimal_value - 1e-12, name


def test_group_runs_keeps_the_longest_run_of_a_seed():
    def record(method, seed, n):
        return {"problem": "p", "method": method, "seed": seed, "values": [0.0] * n}

    records = [
        record("treebo", 0, 10),
        record("random", 1, 10),
        record("treebo", 0, 20),
    ]
    runs = group_runs([*records, record("treebo", 3, 5)], seeds={0, 1})
    assert [len(r["values"]) for r in runs[("p", "treebo")]] == [20]
    assert [r["seed"] for r in runs[("p", "random")]] == [1]


def test_regret_and_branches_are_read_from_the_noise_free_values():
    record = {
        "values": [0.5, 0.05, 0.2],  # noisy: the second looks best
        "true_values": [0.5, 0.3, 0.2],
        "optimal_value": 0.1,
        "branches": ["a", "b", "a"],
        "best_branch": "a",
    }
    curve = log10_regret_curve(record)
    assert curve[2] == pytest.approx(-1.0)
    assert curve[1] == pytest.approx(math.log10(0.2))
    assert not on_wrong_branch(record, 3) and on_wrong_branch(record, 2)


def test_suites_name_registered_problems_and_methods():
    from benchmarks.grid_bo import BKTF_VARIANTS
    from benchmarks.hpob import METHODS as POOL_METHODS
    from benchmarks.problems.grid import GRID_PROBLEMS
    from benchmarks.problems.high_dim import HIGH_DIM_PROBLEMS
    from benchmarks.problems.hpob import TEST_TASKS

    known = {
        "benchmarks.harness": set(PROBLEMS),
        "benchmarks.high_dim": set(HIGH_DIM_PROBLEMS),
        "benchmarks.hpob": {f"hpob_{s}_{d}" for s, d in TEST_TASKS},
        "benchmarks.grid_bo": set(GRID_PROBLEMS),
    }
    methods = set(method_names()) | {"random_tree", "vanilla", "gp_ei", "gp_ucb"}
    methods |= set(POOL_METHODS) | set(BKTF_VARIANTS)
    for name, suite in SUITES.items():
        runner = importlib.import_module(suite.runner)
        assert callable(runner.run), name
        assert set(suite.problems) <= known[suite.runner], name
        assert set(suite.methods) <= methods, name
        if suite.checkpoints:
            assert suite.checkpoints[-1] <= suite.budget, name


def test_every_kind_of_problem_is_a_problem():
    from benchmarks.problems.high_dim import HIGH_DIM_PROBLEMS
    from benchmarks.problems.protocol import Problem

    for name in ("p1a", "v_noisy", "rt_ridge_diab", "rkhs"):
        assert isinstance(make_problem(name), Problem), name
    star = HIGH_DIM_PROBLEMS["star10"](0)
    assert isinstance(star, Problem)
    params = star.space.to_dict(torch.full((10,), 0.5, dtype=torch.float64))
    point = torch.full((1, 10), 0.5, dtype=torch.float64)
    assert star.true_value(params) == float(star.true(point)[0])


def test_presets_build_the_strategy_they_name():
    from treebo.strategies import make_strategy

    names = {preset: make_strategy(model()).name for preset, model in PRESETS.items()}
    assert names["treebo"] == names["treebo_global"] == "add_tree"
    assert names["treebo_ucb"] == names["treebo_ucb_paper"] == "add_tree_ucb"
    assert names["treed_warp"] == "treed"
    paper = make_strategy(PRESETS["treebo_ucb_paper"]()).options
    assert paper.path_selection == "sum" and paper.basin_patience is None
    assert make_strategy(PRESETS["treebo_global"]()).options.local is None


def test_epsilon_greedy_draws_its_coin_from_the_proposal_seed():
    from benchmarks.methods.exploration import EpsilonGreedy
    from treebo.strategies.base import Observations

    space = Jenatton().space
    pool = space.sample(50, seed=1)

    def observations(seed: int) -> Observations:
        X = space.sample(3, seed=2)
        return Observations(
            space,
            X,
            torch.arange(3.0).unsqueeze(-1).to(X),
            torch.zeros(3, dtype=bool),
            ("initial",) * 3,
            X[:0],
            seed,
            3,
        )

    always = EpsilonGreedy(epsilon=1.0)
    picks = [always.propose_from(observations(s), pool) for s in range(40)]
    assert {p.kind for p in picks} == {"random"}
    rows = {int((pool == p.candidate).all(-1).nonzero()) for p in picks}
    assert len(rows) > 20  # uniform over the pool, not one row
    again = always.propose_from(observations(3), pool).candidate
    assert torch.equal(again, picks[3].candidate)  # replays exactly
    heads = [EpsilonGreedy(epsilon=0.25)._coin(observations(s)) for s in range(400)]
    assert 70 < sum(h is not None for h in heads) < 130
    assert EpsilonGreedy(epsilon=0.0)._coin(observations(0)) is None
    with pytest.raises(ValueError, match="epsilon"):
        EpsilonGreedy(epsilon=1.5)


def test_the_harness_in_lockstep_writes_the_values_of_runs_one_by_one(tmp_path):
    args = (["p1a", "p2"], ["treebo_global"], [0, 1], 8)
    alone = harness.run_missing(tmp_path / "alone.jsonl", *args)
    batch = harness.run_missing(tmp_path / "batch.jsonl", *args, lockstep=True)
    key = lambda r: (r["problem"], r["seed"])  # noqa: E731
    assert sorted(map(key, batch)) == sorted(map(key, alone))
    by_key = {key(r): r for r in alone}
    for record in batch:  # equal up to the last bits of batched arithmetic
        alone_values = by_key[key(record)]["values"]
        assert record["values"] == pytest.approx(alone_values, rel=1e-9, abs=1e-12)
        assert record["lockstep_runs"] == 4 and "proposal_seconds" not in record


def test_a_treebo_run_of_the_harness_is_the_loop_from_the_shared_design(tmp_path):
    out = tmp_path / "records.jsonl"
    new = harness.run_missing(out, ["p1a"], ["treebo_global", "random"], [0], 7)
    assert [r["method"] for r in new] == ["treebo_global", "random"]
    again = harness.run_missing(out, ["p1a"], ["treebo_global", "random"], [0], 7)
    assert again == []  # resumed: nothing left to run
    missing = harness.missing_runs(out, ["p1a", "p2"], ["random"], [0, 1], 7)
    assert missing == [("p2", "random", 0), ("p1a", "random", 1), ("p2", "random", 1)]
    ours, rand = harness.load_records([out])
    assert ours["values"][:5] == rand["values"][:5]  # the shared design
    assert len(ours["proposal_seconds"]) == 2
    assert {"date", "machine", "versions", "wall_seconds"} <= set(ours)
    # The same as the loop itself.
    problem = Jenatton()
    opt = TreeOptimizer(problem.space, seed=0, strategy=PRESETS["treebo_global"]())
    for value in ours["values"]:
        params = opt.ask()
        assert problem.objective(params) == value
        opt.tell(params, value)


def test_peer_runs_resume_from_their_checkpoint(tmp_path, monkeypatch):
    calls = []
    fail_at = None

    def fake_proposal(kind, space, X, y, seed):
        # Deterministic in (seed, len(y)), like a seeded BoTorch proposal.
        calls.append(len(y))
        if fail_at is not None and len(y) == fail_at:
            raise KeyboardInterrupt  # the run is killed mid-proposal
        return space.sample(1, seed=seed)

    monkeypatch.setattr(botorch_peers, "botorch_proposal", fake_proposal)
    reference = harness.run("p1a", "hck_logei", 3, 14)["values"]
    n_design = 14 - len(calls)
    # Killed during the proposal of evaluation 11: the first 10 are kept.
    fail_at = 10
    with pytest.raises(KeyboardInterrupt):
        harness.run("p1a", "hck_logei", 3, 12, checkpoint=tmp_path)
    calls.clear()
    fail_at = None
    resumed = harness.run("p1a", "hck_logei", 3, 12, checkpoint=tmp_path)
    assert calls == [10, 11]  # only the missing proposals were made
    assert resumed["values"] == reference[:12]
    assert len(resumed["proposal_seconds"]) == 12 - n_design
    calls.clear()
    extended = harness.run("p1a", "hck_logei", 3, 14, checkpoint=tmp_path)
    assert extended["values"] == reference and calls == [12, 13]
    path = tmp_path / "p1a_hck_logei_3.json"
    path.rename(tmp_path / "p1a_hck_logei_4.json")
    with pytest.raises(ValueError, match="does not hold p1a hck_logei 4"):
        harness.run("p1a", "hck_logei", 4, 14, checkpoint=tmp_path)


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="method must be one of"):
        run_method("nope", Jenatton(), [], 0, 5)
    with pytest.raises(ValueError, match="problem must be one of"):
        harness.run("nope", "random", 0, 5)


def _records(problem, method, optimum, curves):
    return [
        {
            "problem": problem,
            "method": method,
            "seed": seed,
            "budget": len(values),
            "optimal_value": optimum,
            "values": values,
            "proposal_seconds": [0.5] * 3,
            "date": "2026-11-26",
            "machine": "x86_64 1t",
            "versions": {"treebo": "0.1.0"},
        }
        for seed, values in enumerate(curves)
    ]


def test_the_report_regenerates_every_table_from_a_small_record_set(tmp_path):
    # 3 seeds of treebo and HCK on P1(a): treebo lower on 2 seeds, equal on 1.
    ours = [[1.0] * 20 + [0.1 + 1e-6] * 30, [1.0] * 50, [1.0] * 20 + [0.1 + 1e-4] * 30]
    theirs = [[1.0] * 50, [1.0] * 50, [1.0] * 40 + [0.1 + 1e-8] * 10]
    lines = _records("p1a", "treebo", 0.1, ours) + _records(
        "p1a", "hck_logei", 0.1, theirs
    )
    (tmp_path / "conditional.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in lines)
    )
    out = tmp_path / "RESULTS.md"
    report.main(["--records", str(tmp_path), "--out", str(out), "--no-plots"])
    text = out.read_text()
    assert "## Conditional spaces" in text and "## Validation" not in text
    assert "python -m benchmarks.run conditional" in text
    assert "Records of 2026-11-26; machines: x86_64 1t; versions: treebo 0.1.0." in text
    # log10 regret at 25 of the seeds: -6, log10(0.9) = -0.05, -4; midpoint
    # quartiles (-6 + -4) / 2 and (-4 + -0.05) / 2.
    assert "| p1a | **treebo** | 3 | -4.00 [-5.00, -2.02] |" in text
    # @50: treebo -6, -0.05, -4 against HCK -0.05, -0.05, -8.
    row = (
        "| p1a | treebo | hck_logei | 2 / 1 / 0 (p = 0.5; W 0.5) "
        "| 1 / 1 / 1 (p = 1; W 1) |"
    )
    assert row in text


def test_paired_wilcoxon_ranks_differences_and_clips_round_off():
    from benchmarks.stats import paired_wilcoxon

    base = {s: np.array([-2.0, -3.0]) for s in range(8)}
    better = {s: np.array([-2.0, -3.5 - s]) for s in range(8)}
    # Eight lower of eight: the exact two-sided p is 2 / 2^8.
    assert paired_wilcoxon(base, better, 2) == pytest.approx(2 / 256)
    assert paired_wilcoxon(base, better, 1) == 1.0  # all equal at 1
    # Below 1e-16 everything is round-off: -inf and -20 are equal.
    floor = {s: np.array([-np.inf]) for s in range(6)}
    deeper = {s: np.array([-20.0 - s]) for s in range(6)}
    assert paired_wilcoxon(floor, deeper, 1) == 1.0


def _runs(table: dict[tuple[str, str], list[list[float]]]) -> dict:
    return {
        key: [
            {"seed": s, "values": v, "optimal_value": None}
            for s, v in enumerate(values)
        ]
        for key, values in table.items()
    }


def test_holm_matches_the_step_down_rule():
    from benchmarks.stats import holm

    # Sorted 0.01, 0.02, 0.04 times 3, 2, 1, made monotone.
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def test_mean_ranks_rank_medians_per_problem_with_shared_ties():
    from benchmarks.stats import mean_ranks

    runs = _runs(
        {
            ("a", "x"): [[1.0], [1.0], [1.0]],
            ("a", "y"): [[2.0], [2.0], [2.0]],
            ("b", "x"): [[5.0], [5.0], [5.0]],
            ("b", "y"): [[5.0], [5.0], [5.0]],
            ("c", "x"): [[1.0]],  # y did not run c: left out
        }
    )
    assert mean_ranks(runs, ["a", "b", "c"], ["x", "y"], 1) == {
        "x": pytest.approx(1.25),
        "y": pytest.approx(1.75),
    }


def test_mean_ranks_compare_medians_over_the_seeds_every_method_reached():
    from benchmarks.stats import mean_ranks

    # x ran one seed, on which it is worse; y's other seeds would flatter x.
    runs = _runs({("a", "x"): [[2.0]], ("a", "y"): [[1.0], [9.0], [9.0]]})
    assert mean_ranks(runs, ["a"], ["x", "y"], 1) == {"x": 2.0, "y": 1.0}


def test_runs_shorter_than_a_checkpoint_are_left_out_of_its_ranks():
    from benchmarks.stats import mean_ranks

    runs = _runs({("a", "x"): [[1.0, 0.5]], ("a", "y"): [[2.0]]})
    assert mean_ranks(runs, ["a"], ["x", "y"], 1) == {"x": 1.0, "y": 2.0}
    assert mean_ranks(runs, ["a"], ["x", "y"], 2) == {}


def test_pooled_wilcoxon_counts_wins_in_each_problems_units():
    from benchmarks.stats import pooled_wilcoxon

    seeds = 8
    runs = _runs(
        {
            ("mse", "ours"): [[3000.0 - s] for s in range(seeds)],
            ("mse", "peer"): [[3100.0 - s] for s in range(seeds)],
            ("loss", "ours"): [[0.2 + 0.01 * s] for s in range(seeds)],
            ("loss", "peer"): [[0.3 + 0.01 * s] for s in range(seeds)],
        }
    )
    wins, losses, p = pooled_wilcoxon(runs, ["mse", "loss"], "ours", "peer", 1)
    assert (wins, losses) == (16, 0) and p < 1e-3
    _, _, p_swapped = pooled_wilcoxon(runs, ["mse", "loss"], "peer", "ours", 1)
    assert p_swapped == pytest.approx(p)


def test_the_hpob_section_averages_normalized_regret_over_tasks_and_seeds(tmp_path):
    def record(problem, method, seed, values):
        return {
            "problem": problem, "method": method, "seed": seed, "budget": 105,
            "values": values, "pool_min": 0.0, "pool_max": 1.0,
            "date": "2026-11-26", "machine": "x86_64 1t", "versions": {},
        }  # fmt: skip

    # Regret 1 - best: 0.5 until trial 50 after the 5 initial rows, then 0.1 on one
    # task; 0.2 on the other.
    first = [0.5] * 55 + [0.9] * 50
    lines = [
        record("hpob_5527_31", "treebo", 0, first),
        record("hpob_5906_3918", "treebo", 0, [0.8] * 105),
    ]
    path = tmp_path / "hpob.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    text = "\n".join(report.hpob_section(path))
    # at 25: (0.5 + 0.2) / 2; at 50: the same; at 100: (0.1 + 0.2) / 2, both runs
    # above 0.05.
    row = (
        "| treebo (2 tasks) | 1 | 0.3500 | 0.3500 | 0.1500 | 2 of 2 | 0.1000 | 0.2000 |"
    )
    assert row in text
    assert "| BOHAMIANN (published) | 5 | 0.0574 | 0.0329 | 0.0133 |" in text
    assert report.hpob_section(tmp_path / "none.jsonl") == []


def test_hpob_pairs_each_variant_with_the_baseline_on_common_tasks_and_seeds():
    from benchmarks.hpob import paired_against

    def record(method, seed, task, best):
        return {
            "problem": f"hpob_5527_{task}", "method": method, "seed": seed,
            "values": [best] * 105, "pool_min": 0.0, "pool_max": 1.0,
        }  # fmt: skip

    records = [record("treebo", s, t, 0.5) for s in (0, 1) for t in (1, 2)]
    # The variant is better on three pairs, worse on one; seed 2 has no partner.
    records += [record("variant", 0, 1, 0.9), record("variant", 0, 2, 0.9)]
    records += [record("variant", 1, 1, 0.9), record("variant", 1, 2, 0.1)]
    records += [record("variant", 2, 1, 0.9), record("random", 0, 1, 0.0)]
    lines = paired_against(records, "treebo", (100,), exclude={"random"})
    assert lines[0].startswith("Paired with `treebo`")
    assert lines[-1].startswith("| variant (4 pairs) | 3 / 1 (p = ")
    assert not any("random" in line for line in lines[2:])
    assert paired_against(records, "absent", (100,)) == []


def test_the_outlier_section_gives_each_seeds_final_regret_and_medians(tmp_path):
    rows = [
        {"seed": s, "outlier": o, "regret": [1.0, r], "date": "2026-11-26",
         "method": "treebo"}
        for s, o, r in [(0, False, 1e-3), (1, False, 3e-3), (0, True, 0.5),
                        (1, True, 3e-3)]
    ]  # fmt: skip
    other = {**rows[0], "problem": "p2", "method": "treebo_fence"}
    path = tmp_path / "outlier.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, other]))
    text = "\n".join(report.outlier_section(path))
    assert "| clean | 0.001 | 0.003 | 0.002 |" in text
    assert "| one 1e300 | 0.5 | 0.003 | 0.25 |" in text
    assert "Within 1e-4 of the clean run: 1 of 2 seeds." in text
    assert "| p2 |" not in text  # the default's records only


def test_a_suites_missing_runs_are_listed_as_shard_jobs(tmp_path, capsys):
    from benchmarks import run

    out = tmp_path / "records.jsonl"
    args = ["validation", "--problems", "v_flags", "--methods", "random"]
    run.main([*args, "--seeds", "0-1", "--budget", "3", "--out", str(out), "--jobs"])
    jobs = capsys.readouterr().out.splitlines()
    assert jobs == [
        f"benchmarks.run validation --problems v_flags --methods random --seeds {s} "
        "--budget 3"
        for s in (0, 1)
    ]
    assert not out.exists()


def test_shard_runs_jobs_side_by_side_and_stops_them_at_the_deadline(tmp_path):
    from benchmarks import shard

    quick = "benchmarks.run validation --problems v_flags --methods random --budget 3"
    jobs = tmp_path / "jobs.txt"
    jobs.write_text(f"# two seeds\n{quick} --seeds 0\n{quick} --seeds 1\n")
    assert shard.main([str(jobs), "--out", str(tmp_path / "a"), "--workers", "2"]) == 0
    records = (tmp_path / "a" / "records.jsonl").read_text().splitlines()
    assert sorted(json.loads(r)["seed"] for r in records) == [0, 1]
    # A job still running at the deadline is stopped and leaves no record.
    slow = "benchmarks.run validation --problems v_flags --methods treebo --budget 40"
    jobs.write_text(f"{slow} --seeds 0\n")
    out = tmp_path / "b"
    assert shard.main([str(jobs), "--out", str(out), "--deadline", "2"]) == 1
    assert (out / "records.jsonl").read_text() == ""


def test_scaling_times_a_proposal_and_renders_timeouts():
    from benchmarks.perf.scaling import measure
    from benchmarks.perf.tables import scaling

    result = measure("depth3", "treebo", 14, threads=1)
    assert result["cold"] > 0 and result["warm"] > 0 and "peak_growth_mib" in result
    record = {
        "problem": "depth3",
        "n": 14,
        "machine": "x86_64 1t",
        "torch": "2",
        "date": "2026-11-27",
        "treebo": result,
        "flat": {"cold": 2 * result["cold"], "peak_growth_mib": 1.0},
        "hck": {"timeout": 60.0},
    }
    table = scaling([record])
    assert "> 60" in table and "2.00x" in table


def test_the_block_likelihood_equals_the_dense_one(tmp_path):
    from benchmarks.perf.block_likelihood import main as block_likelihood

    out = tmp_path / "blocks.jsonl"
    block_likelihood(
        ["--n", "90", "--branches", "3", "--repeats", "1", "--out", str(out)]
    )
    record = json.loads(out.read_text())
    assert len(record["block_sizes"]) == 3
    assert record["value_difference"] < 1e-8 and record["gradient_difference"] < 1e-8
    from benchmarks.perf.tables import block_likelihood as table

    assert "| 90 | 3 |" in table([record])


def test_a_failed_evaluation_is_the_worst_value_and_the_run_goes_on(
    tmp_path, monkeypatch
):
    from benchmarks import harness
    from benchmarks.problems import make_problem

    problem = make_problem("p1a")
    calls = []

    def failing_once(params):
        calls.append(params)
        if len(calls) == 3:
            raise ValueError("diverged")
        return 1.0

    problem.objective = failing_once
    monkeypatch.setattr(harness, "make_problem", lambda name: problem)
    record = harness.run("p1a", "random", seed=0, budget=6)
    assert record["values"][2] == float("inf") and len(record["values"]) == 6
