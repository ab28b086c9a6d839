"""Many runs' acquisitions evaluated as one: each run gets its own value, gradient and
proposals."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.acquisition.analytic import PosteriorStandardDeviation

from treebo import TreeOptimizer
from treebo.add_tree import AddTreeOptions, AddTreeStrategy, LogEISearch
from treebo.loop.batched_acquisition import (
    AcquisitionBatcher,
    AcquisitionRequest,
    batchable,
)
from treebo.loop.lockstep import Lockstep
from treebo.optim.lbfgsb import value_and_gradient
from treebo.space import Categorical, Choice, Integer, Real, TreeSpace, Vertex
from treebo.test_functions import Jenatton

#: Few starts, one kernel, no local steps: the tests are about the acquisitions.
FAST = AddTreeOptions(
    num_restarts=2, raw_samples=32, alternative_kernels=(), local=None
)


def fitted(seed: int, n: int) -> tuple[TreeOptimizer, torch.Tensor]:
    """A run on Jenatton with ``n`` evaluations told and its model fitted."""
    problem = Jenatton()
    opt = TreeOptimizer(problem.space, seed=seed, strategy=AddTreeStrategy(FAST))
    for params in problem.space.to_dicts(problem.space.sample(n, seed=seed)):
        opt.tell(params, problem.objective(params))
    obs = opt.observations()
    return opt.strategy.fit(obs), obs.y.max()


@pytest.mark.parametrize("kind", ["log_ei", "sd"])
def test_each_request_gets_its_own_value_and_gradient(kind):
    space = Jenatton().space
    runs = [fitted(seed, n) for seed, n in ((0, 10), (1, 10), (2, 10), (3, 12))]
    requests = []
    for r, (model, best) in enumerate(runs):
        if kind == "log_ei":
            acqf = LogExpectedImprovement(model, best_f=best)
        else:
            acqf = PosteriorStandardDeviation(model)
        x = space.sample(5 + 2 * r, seed=10 + r).unsqueeze(-2)  # b differs
        assert batchable(acqf, x)
        requests.append(AcquisitionRequest(acqf, x))
    batcher = AcquisitionBatcher()
    batcher.answer(requests)
    assert batcher.batched == 3 and batcher.evaluations == 1
    assert requests[3].result is None  # another size: evaluated alone
    for request in requests[:3]:
        own_total, own_grad = value_and_gradient(request.acqf, request.x)
        total, grad = request.result
        assert grad.shape == request.x.shape
        torch.testing.assert_close(total, own_total, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(grad, own_grad, rtol=1e-7, atol=1e-9)


def test_what_does_not_batch_is_said_so():
    model, best = fitted(0, 8)
    x = Jenatton().space.sample(3, seed=0).unsqueeze(-2)
    assert batchable(LogExpectedImprovement(model, best_f=best), x)
    assert not batchable(LogExpectedImprovement(model, best_f=best), x.squeeze(-2))
    assert not batchable(lambda z: z.sum(-1), x)
    model.train()
    assert not batchable(LogExpectedImprovement(model, best_f=best), x)


def mixed_space() -> TreeSpace:
    return TreeSpace(
        Vertex(
            [Real("lr", 1e-3, 1.0, log_scale=True), Integer("layers", 1, 4)],
            [
                Choice(
                    "opt",
                    {
                        "sgd": Vertex([Real("momentum", 0.0, 0.99)]),
                        "adam": Vertex([Categorical("beta", ["low", "high"])]),
                    },
                )
            ],
        )
    )


def mixed_objective(p: dict) -> float:
    value = (math.log10(p["lr"]) + 1.5) ** 2 + 0.1 * (p["layers"] - 3) ** 2
    if p["opt"] == "sgd":
        return value + (p["momentum"] - 0.9) ** 2
    return value + (0.05 if p["beta"] == "low" else 0.2)


def bo_run(space, objective, seed: int, budget: int) -> list[dict]:
    # LogEI of the MAP fit: the acquisition the runner batches (the default's
    # integrated LogEI evaluates alone).
    strategy = AddTreeStrategy(FAST, search=LogEISearch(2, 32))
    opt = TreeOptimizer(space, seed=seed, n_initial=4, strategy=strategy)
    for _ in range(budget):
        params = opt.ask()
        opt.tell(params, objective(params))
    return [t.params for t in opt.history]


def close(a: list[dict], b: list[dict]) -> bool:
    """The same configurations, reals to 1e-6 of their values."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.keys() != y.keys():
            return False
        for key, value in x.items():
            other = y[key]
            if isinstance(value, float):
                if not math.isclose(value, other, rel_tol=1e-6, abs_tol=1e-8):
                    return False
            elif value != other:
                return False
    return True


@pytest.mark.parametrize("space_kind", ["continuous", "mixed"])
def test_runs_in_lockstep_make_their_one_by_one_proposals(space_kind):
    if space_kind == "continuous":
        problem = Jenatton()
        space, objective = problem.space, problem.objective
    else:
        space, objective = mixed_space(), mixed_objective
    budgets = (8, 8, 10)  # the third run is one of another size at the end
    alone = [
        bo_run(space, objective, s, b) for s, b in zip(range(3), budgets, strict=True)
    ]
    lockstep = Lockstep(
        [
            lambda s=s, b=b: bo_run(space, objective, s, b)
            for s, b in zip(range(3), budgets, strict=True)
        ]
    )
    outcomes = lockstep.run()
    assert [error for _, error in outcomes] == [None] * 3
    for own, (together, _) in zip(alone, outcomes, strict=True):
        assert close(own, together)
    assert lockstep.acquisitions.batched > 0
    assert lockstep.acquisitions.fallbacks == 0
