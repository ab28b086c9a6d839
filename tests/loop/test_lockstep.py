"""Runs in lockstep: stacked models, batched fits, and results equal to one by one."""

from __future__ import annotations

import copy
import threading
import warnings

import pytest
import torch
from botorch.models import SingleTaskGP
from botorch.optim.closures import get_loss_closure_with_grads
from botorch.optim.utils import get_parameters

from tests.conftest import random_points
from treebo import TreeOptimizer
from treebo.add_tree import AddTreeGP
from treebo.gp import noise_floor_likelihood
from treebo.gp.exact_mll import (
    CholeskyMarginalLogLikelihood,
    PaddedMarginalLogLikelihood,
)
from treebo.gp.stacking import ModelStack, fingerprint, stack_models
from treebo.loop.lockstep import Lockstep, run_in_lockstep
from treebo.test_functions import Jenatton

DEPS = {0: {0: [1, 2], 1: [3]}}
BOUNDS = torch.stack([torch.zeros(4), torch.ones(4)]).double()  # as a space gives


def add_tree_models(
    n: int = 12, known_noise: bool = False, more: int = 0
) -> list[AddTreeGP]:
    """Three Add-Tree GPs at random hyper-parameters; model ``r`` has ``n + r *
    more`` points."""
    models = []
    for seed in range(3):
        X = random_points(4, DEPS, n + seed * more, seed=seed)
        Y = torch.sin(4 * X).sum(-1, keepdim=True) + seed
        noise = (
            {"train_Yvar": torch.full_like(Y, 1e-3 * (seed + 1))}
            if known_noise
            else {"likelihood": noise_floor_likelihood(1e-4)}
        )
        model = AddTreeGP(X, Y, DEPS, bounds=BOUNDS, shared_component=True, **noise)
        torch.manual_seed(seed)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.3 * torch.randn_like(p))
        models.append(model.train())
    return models


def own_value_and_gradients(model) -> tuple[float, dict[str, torch.Tensor]]:
    mll = CholeskyMarginalLogLikelihood(model.likelihood, model)
    parameters = get_parameters(mll, requires_grad=True)
    loss, grads = get_loss_closure_with_grads(mll, parameters=parameters)()
    return float(-loss.detach()), dict(zip(parameters, grads, strict=True))


def assert_each_models_own(values, parameters, models) -> None:
    """The batched ``values`` and, after their backward pass, the gradients of the
    stacked ``parameters`` are each model's own (1e-12)."""
    values.sum().backward()
    for slot, model in enumerate(models):
        value, grads = own_value_and_gradients(model)
        assert abs(float(values[slot].detach()) - value) < 1e-12
        for name, grad in grads.items():
            batched_grad = parameters[name].grad[slot]
            torch.testing.assert_close(-batched_grad, grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("known_noise", [False, True])
def test_a_stacked_model_gives_each_model_its_own_value_and_gradient(known_noise):
    models = add_tree_models(known_noise=known_noise)
    batched = stack_models(models)
    mll = CholeskyMarginalLogLikelihood(batched.likelihood, batched).train()
    parameters = get_parameters(mll, requires_grad=True)
    inputs = [batched.transform_inputs(X=x) for x in batched.train_inputs]
    values = mll(batched(*batched.train_inputs), batched.train_targets, *inputs)
    assert values.shape == (3,)
    assert_each_models_own(values, parameters, models)


@pytest.mark.parametrize("known_noise", [False, True])
def test_models_with_fewer_points_are_padded_to_their_own_value_and_gradient(
    known_noise,
):
    models = add_tree_models(n=9, known_noise=known_noise, more=4)  # 9, 13, 17
    batched = ModelStack(models[0]).load(models)
    assert batched.train_inputs[0].shape == (3, 17, 4)
    sizes = torch.tensor([9.0, 13.0, 17.0], dtype=torch.float64)
    mll = PaddedMarginalLogLikelihood(batched.likelihood, batched, sizes).train()
    parameters = get_parameters(mll, requires_grad=True)
    values = mll(batched(*batched.train_inputs), batched.train_targets)
    assert_each_models_own(values, parameters, models)


def test_stack_models_refuses_models_it_cannot_stack():
    a, b, _ = add_tree_models(n=9, more=4)
    with pytest.raises(ValueError, match="equal numbers of training points"):
        stack_models([a, b])
    X = a.train_inputs[0]
    flat = SingleTaskGP(X, a.train_targets.unsqueeze(-1))
    with pytest.raises(ValueError, match="one fingerprint"):
        stack_models([a, flat])


@pytest.mark.parametrize("known_noise", [False, True])
def test_a_stacked_model_has_each_models_posterior(known_noise):
    models = add_tree_models(known_noise=known_noise)
    batched = stack_models(models).eval()
    Xq = torch.stack([random_points(4, DEPS, 6, seed=10 + r) for r in range(3)])
    with torch.no_grad():
        joint = batched.posterior(Xq)  # 3 x 6 points, one joint posterior each
        # The fast path, q = 1: 6 x 3 x 1 x d (the model's batch trails X's).
        single = batched.posterior(Xq.transpose(0, 1).unsqueeze(-2))
        for r, model in enumerate(models):
            own = model.eval().posterior(Xq[r])
            torch.testing.assert_close(joint.mean[r], own.mean, rtol=0, atol=1e-8)
            torch.testing.assert_close(
                joint.variance[r], own.variance, rtol=0, atol=1e-8
            )
            torch.testing.assert_close(
                single.mean[:, r].reshape(-1), own.mean.reshape(-1), rtol=0, atol=1e-8
            )


def test_fingerprints_tell_structures_apart_and_ignore_data():
    a, b, _ = add_tree_models()
    assert fingerprint(a) == fingerprint(b)  # other data, same structure
    learned = AddTreeGP(a.train_inputs[0], a.train_targets.unsqueeze(-1), DEPS)
    assert fingerprint(learned) != fingerprint(a)  # bounds learned from its data
    more = add_tree_models(n=15)[0]
    assert fingerprint(more) == fingerprint(a)  # the number of points is not in it
    assert fingerprint(copy.deepcopy(a).eval()) == fingerprint(a)  # nor the mode

    def like_a(**settings) -> AddTreeGP:
        X, y = a.train_inputs[0], a.train_targets.unsqueeze(-1)
        return AddTreeGP(X, y, DEPS, bounds=BOUNDS, shared_component=True, **settings)

    floor = like_a(likelihood=noise_floor_likelihood(1e-2))
    assert fingerprint(floor) != fingerprint(a)  # another noise constraint
    other_kernel = like_a(
        base_kernel="matern52", likelihood=noise_floor_likelihood(1e-4)
    )
    assert fingerprint(other_kernel) != fingerprint(a)


def test_stack_models_stacks_botorch_models_too():
    X = torch.rand(2, 10, 2, dtype=torch.float64)
    models = [SingleTaskGP(x, torch.sin(6 * x).sum(-1, keepdim=True)) for x in X]
    batched = stack_models(models)
    assert batched.train_inputs[0].shape == (2, 10, 2)
    assert batched.covar_module.raw_lengthscale.shape == (2, 1, 2)


def pool_run(seed: int, pool: torch.Tensor, budget: int = 9) -> list[float]:
    """A short BO run on a pool of Jenatton configurations."""
    problem = Jenatton()
    opt = TreeOptimizer(problem.space, n_initial=4, seed=seed)
    values = []
    for _ in range(budget):
        config = opt.ask(candidates=pool)
        value = problem.objective(config)
        opt.tell(config, value)
        values.append(value)
    return values


def runs_alone(pool: torch.Tensor, seeds: int, budget: int = 9):
    """The runs one by one, each from the same global random state, and that
    state (restored)."""
    torch.manual_seed(0)
    state = torch.get_rng_state()
    alone = []
    for seed in range(seeds):
        torch.set_rng_state(state)
        alone.append(pool_run(seed, pool, budget))
    torch.set_rng_state(state)
    return alone, state


def test_runs_in_lockstep_equal_the_runs_one_by_one():
    pool = Jenatton().space.sample(300, seed=11)
    alone, state = runs_alone(pool, 3)
    lockstep = Lockstep([lambda s=s: pool_run(s, pool) for s in range(3)])
    outcomes = lockstep.run()
    assert [error for _, error in outcomes] == [None] * 3
    assert [values for values, _ in outcomes] == alone
    assert lockstep.evaluations > 0 and lockstep.fallbacks == 0  # batched fits
    assert torch.equal(torch.get_rng_state(), state)  # the caller's is untouched


def test_a_failed_batched_evaluation_falls_back_to_each_run_alone(monkeypatch):
    pool = Jenatton().space.sample(200, seed=12)
    alone, state = runs_alone(pool, 2, budget=6)

    def fail(*args, **kwargs):
        raise RuntimeError("cholesky failed")

    # The lockstep's batched marginal likelihood fails (not the stacks the runs'
    # own acquisitions build).
    monkeypatch.setattr("treebo.loop.lockstep.PaddedMarginalLogLikelihood", fail)
    torch.set_rng_state(state)
    lockstep = Lockstep([lambda s=s: pool_run(s, pool, budget=6) for s in range(2)])
    outcomes = lockstep.run()
    assert [values for values, _ in outcomes] == alone
    assert lockstep.fallbacks > 0


def test_each_run_has_its_own_warnings_filters_and_random_state():
    def run(silence: bool) -> tuple[torch.Tensor, int]:
        if silence:
            warnings.simplefilter("ignore")
        draws = torch.rand(2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.warn("visible", UserWarning, stacklevel=1)
        return draws, len(caught)

    torch.manual_seed(1)
    expected = torch.rand(2)
    torch.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        before = list(warnings.filters)
        results = run_in_lockstep([lambda: run(True), lambda: run(False)])
        assert warnings.filters == before  # the caller's filters are untouched
    assert all(torch.equal(draws, expected) for draws, _ in results)
    assert [count for _, count in results] == [0, 1]  # the first's filter stays its


def test_errors_are_raised_after_every_run_or_returned():
    finished = []

    def ok():
        finished.append(True)
        return 1

    def broken():
        raise ValueError("objective failed")

    with pytest.raises(ValueError, match="objective failed"):
        run_in_lockstep([broken, ok])
    assert finished == [True]
    results = run_in_lockstep([broken, ok], return_exceptions=True)
    assert isinstance(results[0], ValueError) and results[1] == 1


def test_the_closure_belongs_to_the_runs_threads():
    model = add_tree_models()[0]
    mll = CholeskyMarginalLogLikelihood(model.likelihood, model)
    with pytest.raises(RuntimeError, match="runs' threads"):
        Lockstep([]).closure(mll)
    assert threading.current_thread() is threading.main_thread()
