"""Benchmark helpers: method options and the paired seed-by-seed summary."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from benchmarks.bo_benchmark import DEFAULT_METHOD, treebo_options
from benchmarks.local_steps import parse_variant
from benchmarks.median_ranking import lowest_median_probability
from benchmarks.parallel_workers import slow_objective, table
from benchmarks.sibling_transfer import FlippedGeneralizedJenatton, UnrelatedLeaves
from benchmarks.summarize import load_runs, paired_counts, parse_seeds, sign_test
from benchmarks.winsorized import winsorize_scores
from treebo import TreeOptimizer
from treebo.strategies import AddTreeOptions, AddTreeUCBOptions
from treebo.test_functions import GeneralizedJenatton, Jenatton


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


def test_load_runs_keeps_the_longest_run_of_a_seed_and_suffixes_treebo(tmp_path):
    def record(method, seed, n):
        return json.dumps(
            {"problem": "p", "method": method, "seed": seed, "values": [0.0] * n}
        )

    short, long = tmp_path / "short.jsonl", tmp_path / "long.jsonl"
    short.write_text(record("treebo", 0, 10) + "\n" + record("random", 1, 10) + "\n")
    long.write_text(record("treebo", 0, 20) + "\n" + record("treebo", 3, 5) + "\n")
    runs = load_runs([str(short), str(long)], seeds={0, 1})
    assert [len(r["values"]) for r in runs[("p", "treebo")]] == [20]
    assert [r["seed"] for r in runs[("p", "random")]] == [1]
    runs = load_runs([str(short), str(long)], suffixes={str(long): "_v2"})
    assert sorted(r["seed"] for r in runs[("p", "treebo_v2")]) == [0, 3]
    assert [len(r["values"]) for r in runs[("p", "treebo")]] == [10]


def test_parse_seeds():
    assert parse_seeds("0-3") == {0, 1, 2, 3}
    assert parse_seeds("0-1,7,9-10") == {0, 1, 7, 9, 10}


def test_benchmark_methods_pin_the_old_loops_or_take_the_defaults():
    def options(method):
        return treebo_options(method)["options"]

    paper = treebo_options("treebo_ucb")
    assert paper["model"] == "add_tree_ucb"
    assert paper["options"].path_selection == "sum"
    assert paper["options"].local.patience == 0
    assert paper["options"].basin_patience is None
    default = options("treebo_ucb_default")
    assert (default.path_selection, default.local.patience) == ("joint", 2)
    assert default.basin_patience == 3
    assert options("treebo_logei").kernel.vertex_bias == "none"
    assert options("treebo_logei_offsets").kernel.vertex_bias == "all"
    # The base methods keep the first local steps and no shared components.
    for method in ("treebo_logei", "treebo_logei_offsets", "treebo_ucb_default"):
        old = options(method)
        assert (old.local.acquisitions, old.local.noise_floor) == (("log_ei",), 1e-6)
        assert not old.kernel.shared_component and old.local.mean == "constant"
    # The spelled-out default and "treebo" are TreeOptimizer()'s options.
    assert options(DEFAULT_METHOD) == options("treebo") == AddTreeOptions()
    # The alternative kernel follows the method's kernel; "noint" drops it.
    assert options("treebo_noint").alternatives() == ()
    assert options("treebo_logei").alternatives() == ()
    matern = options("treebo_matern").alternatives()
    assert [(k.base_kernel, k.ancestor_interactions) for k in matern] == [
        ("matern52", True)
    ]
    assert options("treebo_interact").alternatives() == ()
    assert options("treebo_inherit").alternatives() == ()
    # "sells" offers the kernel with a lengthscale vector per vertex as well.
    sells = options("treebo_sells").alternatives()
    assert [(k.ancestor_interactions, k.share_lengthscales) for k in sells] == [
        (True, "depth"),
        (False, "none"),
    ]
    assert options("treebo_noint_sells").alternatives() == sells[1:]
    assert treebo_options("treebo")["model"] == "add_tree"
    assert options("treebo_ucb_default_lnf8_lalt_shc") == AddTreeUCBOptions()
    assert options("treebo_global").local is None
    assert treebo_options("hck_logei") is None
    with pytest.raises(ValueError, match="unknown modifier"):
        treebo_options("treebo_logei_fast")
    with pytest.raises(ValueError, match="retired"):
        treebo_options("treebo_logei_greedy")
    # Every option that the methods build is a valid TreeOptimizer argument.
    space = Jenatton("paper").space
    opt = TreeOptimizer(space, model=options("treebo_ucb"))
    assert opt.strategy.options.path_selection == "sum"


def test_local_step_variants_parse_or_name_the_problem():
    assert parse_variant("alt") == ("alt", {})
    assert parse_variant("ucb:noise_floor=1e-8:beta=0.5") == (
        "ucb",
        {"noise_floor": 1e-8, "beta": 0.5},
    )
    with pytest.raises(ValueError, match="unknown acquisition 'ei'"):
        parse_variant("ei")
    with pytest.raises(ValueError, match="unknown option 'radius'"):
        parse_variant("ucb:radius=0.1")


def test_flipped_tree_reverses_every_other_sibling_and_keeps_the_optimum():
    flipped, plain = FlippedGeneralizedJenatton(), GeneralizedJenatton(depth=4)
    space = flipped.space
    x_star = torch.tensor(flipped._optimizers, dtype=torch.float64)
    assert flipped.evaluate_true(x_star).item() == pytest.approx(0.1, abs=1e-12)
    X = space.sample(500, seed=0)
    assert (flipped.evaluate_true(X) > 0.1).all()
    # Siblings disagree: at depth 1 one branch's r is best at 0, the other's
    # at 1 (brute force over the two r's of depth 1, everything else fixed).
    tree = space.tree
    depth1 = [v.index for v in tree.vertices if v.depth == 1]
    cols = [int(tree.vertex_columns[v, 0]) for v in depth1]
    best_r = []
    for v, col in zip(depth1, cols, strict=True):
        x = space.set_paths(X[:1].clone(), torch.tensor([0]))
        path = int(torch.nonzero(tree.path_vertex_mask[:, v])[0])
        x = space.set_paths(x, torch.tensor([path]))
        grid = x.repeat(11, 1)
        grid[:, col] = torch.linspace(0, 1, 11, dtype=torch.float64)
        best_r.append(float(grid[flipped.evaluate_true(grid).argmin(), col]))
        # The unflipped tree has every r best at 0.
        assert float(grid[plain.evaluate_true(grid).argmin(), col]) == 0.0
    assert sorted(best_r) == [0.0, 1.0]


def test_parallel_worker_modifiers_set_the_batch_and_nothing_else():
    base = treebo_options("treebo_logei_offsets")
    for k in (2, 3, 4):
        options = treebo_options(f"treebo_logei_offsets_par{k}")
        assert options.pop("_batch") == k and base["_batch"] == 1
        assert options == {k: v for k, v in base.items() if k != "_batch"}


def test_the_design_size_modifier_sets_n_initial_and_nothing_else():
    base = treebo_options("treebo")
    options = treebo_options("treebo_init10")
    kwargs = {k: v for k, v in options.items() if k != "_batch"}  # as run() does
    space = GeneralizedJenatton(depth=3).space  # 4 paths: default design 5
    assert TreeOptimizer(space, seed=0, **kwargs).n_initial == 10
    assert options.pop("n_initial") == 10 and "n_initial" not in base
    assert options == base


def test_unrelated_leaves_have_their_stated_minima():
    problem = UnrelatedLeaves()
    space = problem.space
    assert problem.objective(problem.optimal_params) == 0.0
    configs = space.to_dicts(space.sample(3000, seed=1))
    assert min(problem.objective(c) for c in configs) > 0.0
    # Brute force on a grid per leaf (r at its best value): each leaf's minimum
    # is where the docstring puts it, and only "ridge" reaches 0.
    g = np.linspace(0.0, 1.0, 301)
    wave = [problem.objective({"r": 0.37, "leaf": "wave", "w": w}) for w in g]
    assert min(wave) == pytest.approx(0.2, abs=1e-9)
    g2 = np.linspace(0.0, 1.0, 121)
    branin = [
        problem.objective({"r": 0.37, "leaf": "branin", "b1": a, "b2": b})
        for a in g2
        for b in g2
    ]
    assert 0.3 <= min(branin) < 0.302
    # The branch dimensions differ, so the leaves' slot pads unlike parameters.
    dims = {label: len(v.params) for label, v in space.root.choices[0].options.items()}
    assert dims == {"branin": 2, "ridge": 3, "wave": 1}


def test_peer_runs_resume_from_their_checkpoint(tmp_path, monkeypatch):
    import benchmarks.bo_benchmark as bo

    calls = []

    def fake_proposal(kind, space, X, y, seed):
        # Deterministic in (seed, len(y)), like a seeded BoTorch proposal.
        calls.append(len(y))
        if fail_at is not None and len(y) == fail_at:
            raise KeyboardInterrupt  # the run is killed mid-proposal
        return space.sample(1, seed=seed)

    monkeypatch.setattr(bo, "botorch_proposal", fake_proposal)
    fail_at = None
    reference = bo.run("p1a", "hck_logei", 3, 14)["values"]
    n_design = 14 - len(calls)

    # Killed during the proposal of evaluation 11: the first 10 are kept.
    fail_at = 10
    with pytest.raises(KeyboardInterrupt):
        bo.run("p1a", "hck_logei", 3, 12, checkpoint=tmp_path)
    calls.clear()
    fail_at = None
    resumed = bo.run("p1a", "hck_logei", 3, 12, checkpoint=tmp_path)
    assert calls == [10, 11]  # only the missing proposals were made
    assert resumed["values"] == reference[:12]
    assert len(resumed["proposal_seconds"]) == 12 - n_design
    # A finished run extends to a larger budget and truncates to a smaller one.
    calls.clear()
    assert bo.run("p1a", "hck_logei", 3, 14, checkpoint=tmp_path)["values"] == reference
    assert calls == [12, 13]
    short = bo.run("p1a", "hck_logei", 3, 11, checkpoint=tmp_path)
    assert short["values"] == reference[:11]
    assert len(short["proposal_seconds"]) == 11 - n_design
    # Another run's file under this run's name is refused.
    path = tmp_path / "p1a_hck_logei_3.json"
    path.rename(tmp_path / "p1a_hck_logei_4.json")
    with pytest.raises(ValueError, match="does not hold p1a hck_logei 4"):
        bo.run("p1a", "hck_logei", 4, 14, checkpoint=tmp_path)


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
    rows = table(records).splitlines()[2:]
    # Workers sort numerically; ratios are paired seed by seed (2.5x and 4x).
    assert [row.split("|")[1].strip() for row in rows] == ["1", "3", "12"]
    assert rows[1].split("|")[3:7] == [" 30 ", " 3.25x ", " -4.50 ", " 1 / 1 / 0 (1) "]
    assert rows[2].split("|")[4:7] == [" 10.00x ", " -2.00 ", " 0 / 0 / 1 (1) "]


def test_slow_objective_waits_in_proportion_and_returns_the_value(monkeypatch):
    slept = []
    monkeypatch.setattr("benchmarks.parallel_workers.time.sleep", slept.append)
    problem = Jenatton()
    configs = problem.space.to_dicts(problem.space.sample(20, seed=0))
    objective = slow_objective(problem, 2.0)
    assert [objective(c) for c in configs] == [problem.objective(c) for c in configs]
    assert all(1.0 <= s <= 3.0 for s in slept) and max(slept) - min(slept) > 0.5
    objective(configs[0])
    assert slept[-1] == slept[0]  # the same configuration waits as long


def test_validation_problems_reach_their_optimum_and_no_sample_beats_it():
    from benchmarks.validation_problems import VALIDATION_PROBLEMS

    optima = {
        "v_mislead": {"branch": "wide", "w0": 0.7, "w1": 0.25, "w2": 0.6, "w3": 0.4},
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


def test_validation_suite_reads_regret_and_branches_from_the_noise_free_values():
    from benchmarks.validation_suite import log_regret, on_wrong_branch

    record = {
        "values": [0.5, 0.05, 0.2],  # noisy: the second looks best
        "true_values": [0.5, 0.3, 0.2],
        "optimal_value": 0.1,
        "branches": ["a", "b", "a"],
        "best_branch": "a",
    }
    assert log_regret(record, 3) == pytest.approx(-1.0)
    assert log_regret(record, 2) == pytest.approx(math.log10(0.2))
    assert not on_wrong_branch(record, 3) and on_wrong_branch(record, 2)


def test_winsorized_scores_clip_below_tukeys_fence_and_keep_the_good_ones():
    generator = np.random.default_rng(0)
    for n, bad in ((5, 1), (8, 1), (30, 6)):
        s = generator.standard_normal(n)
        s[:bad] -= 50.0  # a heavy bad tail
        # Brute force: quartiles at observed scores, the fence, then z-scores.
        q1 = np.percentile(s, 25, method="lower")
        q3 = np.percentile(s, 75, method="higher")
        clipped = np.maximum(s, q1 - 1.5 * (q3 - q1))
        expected = (clipped - clipped.mean()) / clipped.std(ddof=1)
        out = winsorize_scores(torch.tensor(s).unsqueeze(-1))
        assert out.shape == (n, 1)
        np.testing.assert_allclose(out.squeeze(-1).numpy(), expected, atol=1e-12)
    # Equivariant under a f + b; nothing below the fence: unchanged.
    s = torch.tensor([3.0, -1.0, 0.5, 2.0, -0.25, -40.0, 1.0], dtype=torch.float64)
    torch.testing.assert_close(winsorize_scores(1e-8 * s + 3.0), winsorize_scores(s))
    good = s[:5]
    assert winsorize_scores(good) is good


def test_the_winsorized_strategy_fits_its_model_to_the_clipped_scores():
    problem = Jenatton()
    options = AddTreeOptions(num_restarts=4, raw_samples=64, alternative_kernels=())
    opt = TreeOptimizer(
        problem.space, seed=0, n_initial=8, model="add_tree_winsorized", model=options
    )
    for i in range(8):
        params = opt.ask()
        opt.tell(params, 1e3 if i == 3 else problem.objective(params))
    _, y = opt.training_data()
    opt.ask()  # the first model-based proposal
    targets = opt.last_model.train_targets
    torch.testing.assert_close(targets, winsorize_scores(y).squeeze(-1))
    assert int(targets.argmin()) == 3 and float(y[3]) < float(targets.min())
