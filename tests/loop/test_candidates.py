"""Pools of configurations: validation, fresh rows, ask and minimize."""

from __future__ import annotations

import pytest
import torch

from tests.loop.stubs import Greedy
from treebo import TreeOptimizer, minimize
from treebo.add_tree import AddTreeOptions, AddTreeStrategy
from treebo.loop.candidates import encode_candidates, fresh_candidates
from treebo.space import ConfigurationError, Real, TreeSpace, Vertex
from treebo.test_functions import Jenatton

FAST = AddTreeOptions(num_restarts=4, raw_samples=64)


def encoded(space: TreeSpace, configs: list[dict]) -> set[tuple[float, ...]]:
    return {tuple(row.tolist()) for row in space.to_tensor(configs)}


@pytest.mark.parametrize("as_tensor", [False, True])
def test_every_answer_is_a_fresh_pool_configuration_until_the_pool_runs_out(
    as_tensor,
):
    problem = Jenatton()
    configs = problem.space.to_dicts(problem.space.sample(14, seed=4))
    pool = problem.space.to_tensor(configs) if as_tensor else configs
    opt = TreeOptimizer(
        problem.space, seed=0, n_initial=4, strategy=AddTreeStrategy(FAST)
    )
    asked = []
    for _ in range(14):
        params = opt.ask(candidates=pool)
        asked.append(params)
        opt.tell(params, problem.objective(params))
    assert encoded(problem.space, asked) == encoded(problem.space, configs)
    assert [t.kind for t in opt.history].count("bo") == 10
    with pytest.raises(ValueError, match="every one of the 14 configurations"):
        opt.ask(candidates=pool)


def test_pending_configurations_are_not_asked_again():
    problem = Jenatton()
    configs = problem.space.to_dicts(problem.space.sample(40, seed=5))
    opt = TreeOptimizer(
        problem.space, seed=1, n_initial=3, strategy=AddTreeStrategy(FAST)
    )
    for _ in range(4):
        params = opt.ask(candidates=configs)
        opt.tell(params, problem.objective(params))
    first, second = opt.ask(candidates=configs), opt.ask(candidates=configs)
    assert first != second
    taken = encoded(problem.space, [t.params for t in opt.history])
    assert not encoded(problem.space, [first, second]) & taken
    assert encoded(problem.space, [first, second]) <= encoded(problem.space, configs)


def test_the_pool_optimum_is_found_by_the_model_not_by_luck():
    # f has its minimum at the pool's row 0; 25 of 2000 evaluations find it.
    space = TreeSpace(Vertex([Real("a", 0.0, 1.0), Real("b", 0.0, 1.0)]))
    pool = space.sample(2000, seed=2)
    target = pool[0]

    def f(params):
        return (params["a"] - target[0].item()) ** 2 + (
            params["b"] - target[1].item()
        ) ** 2

    result = minimize(
        f, space, budget=25, seed=0, candidates=pool, strategy=AddTreeStrategy(FAST)
    )
    assert result.best_value == pytest.approx(0.0, abs=1e-12)
    assert encoded(space, [t.params for t in result.history]) <= {
        tuple(r.tolist()) for r in pool
    }


def test_inactive_columns_of_an_encoded_pool_may_hold_anything():
    problem = Jenatton()
    pool = problem.space.sample(30, seed=6)
    active = problem.space.column_activity(pool)
    noisy = torch.where(active, pool, torch.rand_like(pool))
    opt = TreeOptimizer(problem.space, seed=0, strategy=AddTreeStrategy(FAST))
    params = opt.ask(candidates=noisy)
    assert encoded(problem.space, [params]) <= encoded(
        problem.space, problem.space.to_dicts(pool)
    )


def test_bad_pools_are_refused_with_the_reason():
    problem = Jenatton()
    space = problem.space
    opt = TreeOptimizer(space, seed=0)
    pool = space.sample(5, seed=0)
    with pytest.raises(ValueError, match="candidates is empty"):
        opt.ask(candidates=[])
    with pytest.raises(ValueError, match=r"m x 9 encoding"):
        opt.ask(candidates=pool[:, :4])
    with pytest.raises(ValueError, match="not finite"):
        opt.ask(candidates=pool.index_fill(1, torch.tensor([0]), float("nan")))
    beyond = pool.clone()
    beyond[3, 0] = 5.0  # x1, the root choice, has codes 0 and 1
    with pytest.raises(ValueError, match="row 3 is not a configuration.*'x1'"):
        opt.ask(candidates=beyond)
    with pytest.raises(TypeError, match="list of configurations"):
        opt.ask(candidates={"x1": 0})
    with pytest.raises(TypeError, match=r"got a int.*ask\(n\)"):
        opt.ask(candidates=4)
    with pytest.raises(ConfigurationError, match="x1"):
        opt.ask(candidates=[{"x1": 7}])
    with pytest.raises(ValueError, match=r"budget \(6\) exceeds the 5"):
        minimize(problem.objective, space, budget=6, candidates=pool)


def test_a_tensor_pool_is_checked_once_until_it_changes(monkeypatch):
    import treebo.loop.optimizer as optimizer_module

    space = Jenatton().space
    opt = TreeOptimizer(space, seed=0, n_initial=5)
    calls = []

    def counted(*args):
        calls.append(args)
        return encode_candidates(*args)

    monkeypatch.setattr(optimizer_module, "encode_candidates", counted)
    pool = space.sample(6, seed=0)
    first = opt.ask(candidates=pool)
    opt.ask(candidates=pool)
    assert len(calls) == 1
    pool.copy_(space.sample(6, seed=1))  # changed in place: checked again
    beyond = pool.clone()
    beyond[3, 0] = 5.0
    with pytest.raises(ValueError, match="row 3 is not a configuration"):
        opt.ask(candidates=beyond)
    assert opt.ask(candidates=pool) != first
    assert len(calls) == 3
    opt.ask(candidates=space.to_dicts(pool))  # configurations: checked every time
    opt.ask(candidates=space.to_dicts(pool))
    assert len(calls) == 5


def test_a_strategy_without_an_acquisition_says_it_cannot_choose_from_a_pool():
    space = TreeSpace(Vertex([Real("a", 0.0, 1.0)]))
    opt = TreeOptimizer(space, seed=0, n_initial=1, strategy=Greedy())
    pool = space.sample(10, seed=0)
    opt.tell(opt.ask(candidates=pool), 1.0)
    with pytest.raises(ConfigurationError, match="strategy='greedy' cannot choose"):
        opt.ask(candidates=pool)


def test_fresh_candidates_drop_seen_rows_up_to_round_off():
    problem = Jenatton()
    space = problem.space
    pool = encode_candidates(space, space.sample(6, seed=8))
    seen = pool[[1, 4]] * (1 + 1e-9)  # a float round trip away
    fresh = fresh_candidates(space, pool, seen)
    assert torch.equal(fresh, pool[[0, 2, 3, 5]])
    with pytest.raises(ValueError, match="every one of the 6"):
        fresh_candidates(space, pool, pool)


def test_an_invalid_pool_is_refused_before_a_checkpoint_is_written(tmp_path):
    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    with pytest.raises(ValueError, match="candidates is empty"):
        minimize(problem.objective, problem.space, budget=3, checkpoint=path,
                 candidates=[])  # fmt: skip
    assert not path.exists()


def test_a_dataframe_or_records_with_nan_for_inactive_parameters_are_pools():
    pd = pytest.importorskip("pandas")
    space = Jenatton().space
    configs = space.to_dicts(space.sample(6, seed=2))
    frame = pd.DataFrame(configs, index=[f"run{i}" for i in range(6)])
    assert frame.isna().any().any()  # inactive parameters are NaN
    expected = space.to_tensor(configs)
    assert torch.equal(encode_candidates(space, frame), expected)
    assert torch.equal(encode_candidates(space, frame.to_dict("records")), expected)
    frame.loc["run4", "x5"] = 3.0  # out of bounds
    with pytest.raises(ConfigurationError, match=r"candidates row 'run4'.*x5"):
        encode_candidates(space, frame)
    with pytest.raises(TypeError, match="row 1 must be a dict"):
        encode_candidates(space, [configs[0], [0.5]])


def test_repeated_rows_are_dropped_before_the_budget_is_checked():
    problem = Jenatton()
    configs = problem.space.to_dicts(problem.space.sample(4, seed=3))
    pool = [*configs, configs[1], configs[3]]
    with pytest.warns(UserWarning, match=r"2 rows repeat.*row 4 \(= row 1\)"):
        encoded_pool = encode_candidates(problem.space, pool)
    assert torch.equal(encoded_pool, problem.space.to_tensor(configs))
    with pytest.warns(UserWarning, match="repeat"):
        with pytest.raises(ValueError, match=r"budget \(5\) exceeds the 4"):
            minimize(problem.objective, problem.space, budget=5, candidates=pool)


def test_rows_a_round_off_apart_are_merged_before_any_evaluation(tmp_path):
    """Rows 1e-9 apart are one configuration to the loop: merged up front (with the
    rows named), not a crash after six of seven evaluations."""
    problem = Jenatton()
    pool = problem.space.sample(6, seed=3)
    near = pool[2:3] + 1e-9 * problem.space.column_activity(pool[2:3])
    pool = torch.cat([pool, near])
    calls = []

    def objective(params):
        calls.append(params)
        return problem.objective(params)

    with pytest.warns(UserWarning, match=r"1 rows repeat.*row 6 \(= row 2\)"):
        with pytest.raises(ValueError, match=r"budget \(7\) exceeds the 6"):
            minimize(objective, problem.space, budget=7, candidates=pool)
    assert not calls
    with pytest.warns(UserWarning, match="row 6"):
        result = minimize(objective, problem.space, budget=6, seed=0, candidates=pool,
                          checkpoint=tmp_path / "run.jsonl")  # fmt: skip
    assert len(result.history) == 6 and len(calls) == 6


def test_repeated_rows_match_a_brute_force_reference():
    from treebo.loop.candidates import repeated_rows

    generator = torch.Generator().manual_seed(0)
    pool = torch.rand(300, 4, dtype=torch.float64, generator=generator)
    pool[10] = pool[3] + 1e-9  # near repeats
    pool[20] = pool[3]  # an exact one
    pool[40] = pool[7] - 5e-7
    pool = torch.cat([pool, pool[:25]])  # many exact ones
    width = torch.ones(4, dtype=torch.float64)
    gap = torch.cdist(pool, pool, p=float("inf"))
    earlier = (gap <= 1e-6) & torch.ones_like(gap, dtype=torch.bool).tril(-1)
    reference = torch.where(earlier.any(-1), earlier.int().argmax(-1), -1)
    torch.testing.assert_close(repeated_rows(pool, width, 1e-6), reference)


def test_a_batch_from_a_pool_is_distinct_fresh_pool_rows():
    problem = Jenatton()
    pool = problem.space.to_dicts(problem.space.sample(12, seed=1))
    opt = TreeOptimizer(
        problem.space, seed=0, n_initial=3, strategy=AddTreeStrategy(FAST)
    )
    for params in opt.ask(3, pool):
        opt.tell(params, problem.objective(params))
    batch = opt.ask(4, pool)  # three initial rows told, then a model's batch
    assert encoded(problem.space, batch) <= encoded(problem.space, pool)
    assert len(encoded(problem.space, batch)) == 4
    told = encoded(problem.space, [t.params for t in opt.history])
    assert not encoded(problem.space, batch) & told
