"""TreeOptimizer: ask/tell, pending configurations, failures, resume, arguments."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from botorch.exceptions import ModelFittingError

from tests.loop.stubs import Greedy
from treebo import Categorical, Choice, Integer, Real, TreeOptimizer, TreeSpace, Vertex
from treebo.add_tree import (
    AddTreeOptions,
    AddTreeStrategy,
    AddTreeUCBOptions,
    AddTreeUCBStrategy,
    LocalStepOptions,
)
from treebo.test_functions import GeneralizedJenatton, Jenatton, jenatton_space

FAST = AddTreeOptions(num_restarts=4, raw_samples=64)


def run(opt: TreeOptimizer, objective, n: int) -> None:
    for _ in range(n):
        params = opt.ask()
        opt.tell(params, objective(params))


def test_ask_tell_with_dicts_and_kinds():
    problem = Jenatton()
    opt = TreeOptimizer(
        problem.space, seed=0, n_initial=3, strategy=AddTreeStrategy(FAST)
    )
    run(opt, problem.objective, 4)
    assert [t.kind for t in opt.history] == ["initial"] * 3 + ["bo"]
    assert opt.best_trial.value == min(t.value for t in opt.history)
    assert opt.history[-1].proposal_seconds > 0.0
    # The history's encoding is the space's encoding of the told dicts.
    expected = problem.space.to_tensor([t.params for t in opt.history])
    assert torch.equal(opt.history.X, expected)


def test_same_seed_same_run_and_maximize_mirrors_minimize():
    problem = Jenatton()
    a = TreeOptimizer(
        problem.space, seed=5, n_initial=5, strategy=AddTreeStrategy(FAST)
    )
    b = TreeOptimizer(
        problem.space, seed=5, n_initial=5, strategy=AddTreeStrategy(FAST)
    )
    neg = TreeOptimizer(
        problem.space,
        seed=5,
        n_initial=5,
        strategy=AddTreeStrategy(FAST),
        maximize=True,
    )
    run(a, problem.objective, 7)
    run(b, problem.objective, 7)
    run(neg, lambda p: -problem.objective(p), 7)
    assert [t.params for t in a.history] == [t.params for t in b.history]
    # Maximizing -f is minimizing f: the same proposals.
    assert [t.params for t in neg.history] == [t.params for t in a.history]
    assert neg.best_trial.value == -a.best_trial.value


def test_add_tree_ucb_with_maximize_mirrors_minimize():
    problem = Jenatton()
    kwargs = {"strategy": "add_tree_ucb", "seed": 1, "n_initial": 5}
    low = TreeOptimizer(problem.space, **kwargs)
    high = TreeOptimizer(problem.space, maximize=True, **kwargs)
    run(low, problem.objective, 8)
    run(high, lambda p: -problem.objective(p), 8)
    assert [t.params for t in high.history] == [t.params for t in low.history]
    assert {t.kind for t in low.history[5:]} <= {"bo", "local", "away"}


def test_a_model_that_cannot_be_fitted_falls_back_to_random(monkeypatch):
    space = jenatton_space()
    opt = TreeOptimizer(space, seed=0, n_initial=2)

    def broken(observations):
        raise ModelFittingError("singular")

    monkeypatch.setattr(opt.strategy, "fit", broken)
    run(opt, lambda p: 1.0, 2)
    with pytest.warns(RuntimeWarning, match="the model failed"):
        params = opt.ask()
    space.validate(params)
    opt.tell(params, 1.0)
    assert [t.kind for t in opt.history] == ["initial", "initial", "random"]


def test_only_failures_keep_the_loop_sampling_at_random():
    space = jenatton_space()
    opt = TreeOptimizer(space, seed=0, n_initial=2)
    with pytest.warns(RuntimeWarning, match="first 3 evaluations all failed"):
        run(opt, lambda p: math.nan, 4)
    assert [t.status for t in opt.history] == ["failed"] * 4
    assert [t.kind for t in opt.history] == ["initial"] * 4
    with pytest.warns(RuntimeWarning, match="none of the 4 evaluations succeeded"):
        assert opt.best_trial is None and opt.result().best_params is None


def test_tell_with_round_off_answers_the_pending_configuration():
    problem = Jenatton()
    opt = TreeOptimizer(
        problem.space, seed=0, n_initial=5, strategy=AddTreeStrategy(FAST)
    )
    run(opt, problem.objective, 5)
    asked = opt.ask()
    assert opt.history.kinds[-1] == "initial" and len(opt.pending) == 1
    # The user's code returns the values a little off (float32 round trip).
    told = {
        k: float(torch.tensor(v, dtype=torch.float32)) if isinstance(v, float) else v
        for k, v in asked.items()
    }
    assert told != asked
    trial = opt.tell(told, problem.objective(told))
    assert trial.kind == "bo" and trial.proposal_seconds > 0
    assert opt.pending == [] and trial.params == told
    # A configuration that is really different is the user's own.
    other = problem.space.to_dicts(problem.space.sample(1, seed=9))[0]
    assert opt.tell(other, 1.0).kind == "user"


@pytest.mark.parametrize("strategy", ["add_tree", "add_tree_ucb"])
def test_pending_configurations_are_not_proposed_again(strategy):
    problem = Jenatton("paper")
    opt = TreeOptimizer(problem.space, seed=0, strategy=strategy)
    run(opt, problem.objective, opt.n_initial + 3)
    batch = [opt.ask() for _ in range(3)]
    X = problem.space.to_tensor(batch)
    width = problem.space.bounds[1] - problem.space.bounds[0]
    gaps = ((X[:, None] - X[None]).abs() / width).amax(-1)
    assert (gaps + torch.eye(3) * 1e9 > 1e-4).all()
    assert len(opt.pending) == 3
    for params in batch:
        opt.tell(params, problem.objective(params))
    assert opt.pending == []


@pytest.mark.parametrize("strategy", ["add_tree", "add_tree_ucb"])
def test_a_resumed_run_proposes_what_the_uninterrupted_run_did(tmp_path, strategy):
    problem = Jenatton("paper")
    kwargs = {"strategy": strategy, "seed": 2, "n_initial": 5}
    whole = TreeOptimizer(problem.space, **kwargs)
    run(whole, problem.objective, 10)
    path = tmp_path / "run.json"
    first = TreeOptimizer(problem.space, checkpoint=path, **kwargs)
    run(first, problem.objective, 7)
    del first  # killed after 7 evaluations
    resumed = TreeOptimizer(problem.space, checkpoint=path, **kwargs)
    assert len(resumed.history) == 7
    run(resumed, problem.objective, 3)
    assert [t.params for t in resumed.history] == [t.params for t in whole.history]
    assert [t.kind for t in resumed.history] == [t.kind for t in whole.history]


def test_a_tree_of_31_vertices():
    problem = GeneralizedJenatton(depth=5, balanced=True)
    space = problem.space
    assert space.tree.num_vertices == 31 and space.num_paths == 16
    opt = TreeOptimizer(space, seed=0, n_initial=6, strategy=AddTreeStrategy(FAST))
    run(opt, problem.objective, 9)
    assert [t.kind for t in opt.history[6:]] == ["bo"] * 3
    for trial in opt.history:
        space.validate(trial.params)
    # Every configuration activates exactly one root-to-leaf path.
    active = space.tree.vertex_activity(opt.history.X)
    on_path = active.double() @ space.tree.path_vertex_mask.double().T
    assert (on_path.amax(-1) == active.sum(-1)).all()


def test_bad_optimizer_arguments(tmp_path):
    space = jenatton_space()
    with pytest.raises(TypeError, match="TreeSpace"):
        TreeOptimizer({"x": 1})
    with pytest.raises(ValueError, match="strategy must be one of"):
        TreeOptimizer(space, strategy="gp")
    with pytest.raises(TypeError, match="strategy must be a strategy name"):
        TreeOptimizer(space, strategy=3)
    with pytest.raises(TypeError, match="got LocalStepOptions"):
        TreeOptimizer(space, strategy=LocalStepOptions())  # options: constructors
    with pytest.raises(TypeError, match="options of the 'add_tree' model"):
        AddTreeStrategy(AddTreeUCBOptions())  # another model's
    with pytest.raises(TypeError, match="dtype must be a floating point"):
        AddTreeStrategy(dtype=torch.int64)
    with pytest.raises(ValueError, match="n_initial"):
        TreeOptimizer(space, n_initial=0)
    with pytest.raises(ValueError, match="seed"):
        TreeOptimizer(space, seed=1.5)
    with pytest.raises(ValueError, match=r"seed must be .* < 4294967296"):
        TreeOptimizer(space, seed=2**62)
    assert TreeOptimizer(space, seed=np.int64(3), n_initial=np.int64(4)).seed == 3
    assert TreeOptimizer(
        space, strategy=AddTreeUCBStrategy(AddTreeUCBOptions())
    ).strategy.name == ("add_tree_ucb")
    with pytest.raises(ValueError, match="checkpoint must be a file path"):
        TreeOptimizer(space, checkpoint=tmp_path)
    opt = TreeOptimizer(space, seed=0)
    with pytest.raises(TypeError, match="eval_seconds must be a number"):
        opt.tell(opt.ask(), 1.0, eval_seconds="3 s")


def test_integers_and_categoricals_are_proposed_without_repeats():
    space = TreeSpace(Vertex([Integer("n", 0, 40), Categorical("c", ["a", "b", "c"])]))

    def objective(config):
        return (config["n"] - 17) ** 2 / 100 + (config["c"] != "b")

    opt = TreeOptimizer(space, seed=0, strategy=AddTreeStrategy(FAST))
    run(opt, objective, 14)
    seen = [(t.params["n"], t.params["c"]) for t in opt.history]
    assert all(isinstance(n, int) for n, _ in seen)
    assert len(set(seen)) == len(seen)  # no evaluated point proposed again
    assert opt.best_trial.params == {"n": 17, "c": "b"}


def flag_tuning_space(k: int) -> TreeSpace:
    """k flags that each activate a parameter, beside a log-scale rate: 2^k paths."""
    flags = [
        Choice(f"use_{i}", {False: Vertex(), True: Vertex([Real(f"w{i}", 0, 1)])})
        for i in range(k)
    ]
    return TreeSpace(Vertex([Real("lr", 1e-4, 1.0, log_scale=True)], flags))


@pytest.mark.parametrize("name", ["add_tree", "add_tree_ucb"])
def test_a_space_of_4096_paths_resumes_exactly(tmp_path, name):
    space = flag_tuning_space(12)
    assert space.num_paths == 4096

    def objective(config):
        value = (math.log10(config["lr"]) + 2) ** 2
        return value + sum(
            config.get(f"w{i}", 1.0) if i % 3 else 1 - config.get(f"w{i}", 0.0)
            for i in range(12)
        )

    def strategy():
        if name == "add_tree":
            return AddTreeStrategy(FAST)
        return AddTreeUCBStrategy(AddTreeUCBOptions(num_restarts=4, raw_samples=64))

    kwargs = {"seed": 1, "n_initial": 6}
    whole = TreeOptimizer(space, strategy=strategy(), **kwargs)
    run(whole, objective, 8)
    path = tmp_path / "run.jsonl"
    first = TreeOptimizer(space, strategy=strategy(), checkpoint=path, **kwargs)
    run(first, objective, 7)
    del first
    resumed = TreeOptimizer(space, strategy=strategy(), checkpoint=path, **kwargs)
    run(resumed, objective, 1)
    assert [t.params for t in resumed.history] == [t.params for t in whole.history]
    assert {t.kind for t in whole.history[6:]} <= {"bo", "local"}


def test_a_proposals_global_random_draws_follow_the_run_seed_not_the_process():
    from dataclasses import dataclass

    from treebo.strategies.base import Observations, Proposal, Strategy

    @dataclass(frozen=True)
    class NoOptions:
        pass

    class GlobalDraws(Strategy):
        """Proposes from torch's global generator (as a fit's restarts do)."""

        name = "test_global_draws"
        options_type = NoOptions

        def propose(self, observations: Observations) -> Proposal:
            bounds = observations.space.bounds.to(observations.X)
            u = torch.rand(bounds.shape[-1], dtype=bounds.dtype)
            return Proposal(bounds[0] + u * (bounds[1] - bounds[0]), "bo")

    space = TreeSpace(Vertex([Real("x", 0.0, 1.0), Real("y", 0.0, 1.0)]))

    def proposals(process_seed: int) -> list[dict]:
        torch.manual_seed(process_seed)  # another process's global state
        opt = TreeOptimizer(space, seed=3, n_initial=2, strategy=GlobalDraws())
        asked = []
        for _ in range(5):
            params = opt.ask()
            opt.tell(params, params["x"] + params["y"])
            asked.append(params)
        return asked

    assert proposals(0) == proposals(12345)
    # The caller's generator is left where it was.
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    opt = TreeOptimizer(space, seed=3, n_initial=1, strategy=GlobalDraws())
    opt.tell(opt.ask(), 1.0)
    opt.ask()
    torch.testing.assert_close(torch.rand(3), expected)


@pytest.mark.parametrize("strategy", ["add_tree", "jenatton_tree"])
def test_ask_n_returns_a_batch_of_distinct_valid_configurations(strategy):
    problem = Jenatton()
    opt = TreeOptimizer(problem.space, seed=0, strategy=strategy)
    run(opt, problem.objective, 6)
    batch = opt.ask(4)
    assert len(batch) == 4 and opt.pending == batch
    for params in batch:
        assert problem.space.validate(params) == params
    encoded = problem.space.to_tensor(batch)
    gaps = torch.cdist(encoded, encoded, p=float("inf"))
    assert bool((gaps + torch.eye(4) > 1e-6).all())  # distinct
    assert isinstance(opt.ask(), dict)  # one, as before
    assert len(opt.ask(np.int64(2))) == 2  # a NumPy integer is a count too
    with pytest.raises(ValueError, match="n must be"):
        opt.ask(0)


def test_a_strategy_that_cannot_batch_refuses_ask_n_by_name():
    from treebo.space import ConfigurationError

    space = TreeSpace(Vertex([Real("a", 0.0, 1.0)]))
    opt = TreeOptimizer(space, seed=0, n_initial=1, strategy=Greedy())
    with pytest.raises(ConfigurationError, match="strategy='greedy' cannot choose 3"):
        opt.ask(3)
    assert len(opt.ask(1)) == 1


def test_minimize_in_batches_is_reproducible_and_tells_every_evaluation():
    from treebo import minimize

    problem = Jenatton()
    calls = []

    def objective(params):
        calls.append(params)
        return problem.objective(params)

    first = minimize(objective, problem.space, budget=7, seed=1, batch_size=4,
                     strategy=AddTreeStrategy(FAST))  # fmt: skip
    again = minimize(problem.objective, problem.space, budget=7, seed=1,
                     batch_size=4, strategy=AddTreeStrategy(FAST))  # fmt: skip
    assert len(first.history) == 7 == len(calls)  # the last batch is cut to 3
    assert first.values == again.values
    with pytest.raises(ValueError, match="batch_size and n_workers"):
        minimize(objective, problem.space, budget=4, batch_size=2, n_workers=2)
