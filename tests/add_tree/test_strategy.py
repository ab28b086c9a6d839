"""The Add-Tree strategies: local steps, redirects off resolved basins, repeats."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import treebo.add_tree.strategy as add_tree
from treebo import TreeOptimizer
from treebo.add_tree import (
    AddTreeKernelOptions,
    AddTreeKernelSum,
    AddTreeOptions,
    AddTreeStrategy,
    AddTreeUCBOptions,
)
from treebo.optim.tree_optimize import TreeCandidate
from treebo.strategies import Observations
from treebo.strategies.fitting import WarmStartFit
from treebo.test_functions import Jenatton


def observations(space, X, values, kinds, noise="deterministic") -> Observations:
    """Scores of deterministic ``values`` to minimize (local steps apply)."""
    y = -torch.tensor(values, dtype=torch.float64).unsqueeze(-1)
    return Observations(
        space=space,
        X=X,
        y=y,
        failed=torch.zeros(len(values), dtype=torch.bool),
        kinds=tuple(kinds),
        X_pending=torch.empty(0, space.dim, dtype=torch.float64),
        seed=0,
        n_initial=4,
        noise=noise,
    )


@pytest.fixture
def rigged(monkeypatch):
    """A UCB strategy whose acquisition prefers the incumbent's own point, a
    fake local step, and every path's candidate."""
    space = Jenatton("paper").space
    X = space.sample(4, seed=0)
    X = space.set_paths(X, torch.arange(4))
    own = 0  # the incumbent (lowest value) is on path 0
    rows = space.set_paths(space.sample(4, seed=3), torch.arange(4))
    rows[own] = X[own]
    values = torch.tensor([10.0, 3.0, 1.0, 2.0], dtype=torch.float64)
    fake = TreeCandidate(rows[own : own + 1], values[own], own, values, rows)
    strategy = add_tree.AddTreeUCBStrategy(AddTreeUCBOptions(basin_patience=1))
    monkeypatch.setattr(strategy, "fit", lambda obs: None)
    monkeypatch.setattr(strategy.search, "propose", lambda *a: fake)
    local = {"step": X[1:2] * 0 + rows[own] + 0.01}
    monkeypatch.setattr(strategy.local, "candidate", lambda *a: local["step"])
    return space, X, rows, strategy, local


def test_a_near_proposal_becomes_a_local_step_while_the_basin_is_open(rigged):
    space, X, rows, strategy, _ = rigged
    obs = observations(space, X, [0.1, 0.5, 0.6, 0.7], ["initial"] * 4)
    proposal = strategy.propose(obs)
    assert proposal.kind == "local"


def test_a_resolved_basin_sends_the_proposal_to_the_best_other_path(rigged):
    space, X, rows, strategy, local = rigged
    # One failed local step resolves the basin (basin_patience=1).
    X5 = torch.cat([X, X[:1] + 0.001])
    obs = observations(
        space, X5, [0.1, 0.5, 0.6, 0.7, 0.2], ["initial"] * 4 + ["local"]
    )
    proposal = strategy.propose(obs)
    assert proposal.kind == "away"
    assert torch.equal(proposal.candidate, rows[1])  # second-best path value
    # LogEI never redirects: the same history gives a local step.
    logei = AddTreeStrategy()
    assert not logei.search.redirect(add_tree.count_failures(obs.scores, obs.kinds))
    # Without a local step, a proposal that repeats an observation gives way
    # to the best path candidate not yet evaluated.
    local["step"] = None
    strategy.search.basin_patience = None
    proposal = strategy.propose(obs)
    assert proposal.kind == "bo" and torch.equal(proposal.candidate, rows[1])


INTERACTING = dataclasses.replace(AddTreeOptions().kernel, ancestor_interactions=True)


def interacting_objective(params: dict) -> float:
    """Jenatton's tree, with the best leaf value depending on the parameter
    of the vertex above it (an interaction Definition 4 cannot represent)."""
    shift = params.get("r8", params.get("r9", 0.0))
    leaf = next(v for k, v in params.items() if k in ("x4", "x5", "x6", "x7"))
    return (leaf - shift) ** 2 + 0.1 * shift


@pytest.mark.full_optimizers  # the comparison needs converged fits
@pytest.mark.parametrize("objective", ["jenatton", "interacting"])
def test_alternative_kernels_are_used_where_they_predict_clearly_better(objective):
    from treebo.gp.fit import loo_log_densities, predicts_better

    problem = Jenatton()
    space = problem.space
    f = problem.objective if objective == "jenatton" else interacting_objective
    X = space.sample(16, seed=4, by="choice")
    obs = observations(space, X, [f(p) for p in space.to_dicts(X)], ["init"] * 16)
    options = AddTreeOptions(alternative_kernels=(INTERACTING,))
    strategy = AddTreeStrategy(options)
    torch.manual_seed(0)
    model = strategy.fit(obs)
    # The same fits, made independently (the alternative from the main fit, as
    # it nests it): the strategy keeps the alternative exactly where its
    # leave-one-out gain is clear.
    torch.manual_seed(0)
    densities, state = {}, None
    for kernel in (options.kernel, INTERACTING):
        fitter = WarmStartFit()
        fitter.state = state
        fitted = fitter.fit(
            lambda floor, k=kernel: strategy.model_fit.build(obs, X, obs.y, floor, k),
            strategy.model_fit.noise_floor(obs.noise),
        )
        state = fitter.state
        densities[kernel] = loo_log_densities(fitted)
    better = predicts_better(densities[INTERACTING], densities[options.kernel])
    best = INTERACTING if better else options.kernel
    assert strategy.model_fit.kernel_in_use == best
    torch.testing.assert_close(loo_log_densities(model), densities[best])
    assert isinstance(model.covar_module, AddTreeKernelSum) == better
    assert strategy.model_fit.alternative_fitters[0].state is not None
    # On these seeded data the interaction terms win exactly where they exist.
    assert better == (objective == "interacting")


def test_the_default_alternative_is_the_kernel_with_interaction_terms():
    assert AddTreeOptions().alternatives() == (INTERACTING,)
    matern = AddTreeKernelOptions(base_kernel="matern52", vertex_bias="all")
    (alternative,) = AddTreeOptions(kernel=matern).alternatives()
    assert alternative == dataclasses.replace(matern, ancestor_interactions=True)
    # A kernel that already has the interaction terms has none.
    assert AddTreeOptions(kernel=INTERACTING).alternatives() == ()
    assert AddTreeOptions(alternative_kernels=()).alternatives() == ()
    assert AddTreeUCBOptions().alternatives() == ()
    # The strategy fits one model per alternative, warm-started on its own.
    assert len(AddTreeStrategy().model_fit.alternative_fitters) == 1
    assert (
        AddTreeStrategy(
            AddTreeOptions(alternative_kernels=())
        ).model_fit.alternative_fitters
        == []
    )


def test_an_alternative_that_changes_nothing_is_not_fitted():
    from treebo import Real, TreeSpace, Vertex

    space = TreeSpace(Vertex([Real("a", 0.0, 1.0), Real("b", 0.0, 1.0)]))
    X = space.sample(8, seed=0)
    values = (X - 0.3).square().sum(-1).tolist()
    strategy = AddTreeStrategy(AddTreeOptions(alternative_kernels=(INTERACTING,)))
    strategy.fit(observations(space, X, values, ["init"] * 8))
    assert strategy.model_fit.alternative_fitters[0].state is None
    assert strategy.model_fit.kernel_in_use == AddTreeOptions().kernel


def test_a_run_with_alternative_kernels_resumes_exactly(tmp_path):
    from treebo import minimize

    class Killed(KeyboardInterrupt):  # the process being killed
        pass

    problem, path = Jenatton(), tmp_path / "run.json"
    options = AddTreeOptions(alternative_kernels=(INTERACTING,), local=None)
    kwargs = dict(budget=9, seed=1, n_initial=5)
    full = minimize(
        interacting_objective,
        problem.space,
        strategy=AddTreeStrategy(options),
        **kwargs,
    )
    seen = []
    dying = [True]

    def dies_after_seven(params):
        if dying[0] and len(seen) == 7:
            raise Killed
        seen.append(params)
        return interacting_objective(params)

    kwargs.update(checkpoint=path)
    with pytest.raises(Killed):
        minimize(
            dies_after_seven, problem.space, strategy=AddTreeStrategy(options), **kwargs
        )
    dying[0] = False  # the same objective, resumed
    resumed = minimize(
        dies_after_seven, problem.space, strategy=AddTreeStrategy(options), **kwargs
    )
    assert [t.params for t in resumed.history] == [t.params for t in full.history]


def test_a_local_step_sees_the_finished_evaluations_and_the_pending_ones(
    rigged, monkeypatch
):
    space, X, rows, strategy, local = rigged
    pending = space.sample(2, seed=7)
    obs = dataclasses.replace(
        observations(space, X, [0.1, 0.5, 0.6, 0.7], ["initial"] * 4),
        X_pending=pending,
    )

    def believe(model, X, y, X_pending, rebuild):  # the global believer's data
        return model, torch.cat([X, X_pending]), torch.cat([y, y[:2]])

    monkeypatch.setattr(add_tree, "believe_pending", believe)
    seen = []
    monkeypatch.setattr(
        strategy.local, "candidate", lambda *a: seen.append(a) or local["step"]
    )
    assert strategy.propose(obs).kind == "local"
    (args,) = seen
    assert args[1] is obs.X and args[2] is obs.y and args[4] is pending


def test_a_checkpoint_tells_strategies_with_other_parts_apart(tmp_path):
    from treebo.add_tree import LocalStepOptions, LocalSteps, LocalStepSettings
    from treebo.loop import CheckpointMismatchError
    from treebo.strategies.base import strategy_identity

    assert strategy_identity(AddTreeStrategy()) == "add_tree"
    wider = LocalSteps(LocalStepOptions(), LocalStepSettings(radius=0.1))
    variants = [AddTreeStrategy(screen=None), AddTreeStrategy(local_steps=wider)]
    assert "screen=None" in strategy_identity(variants[0])
    assert "radius=0.1" in strategy_identity(variants[1])
    problem, path = Jenatton(), tmp_path / "run.jsonl"
    opt = TreeOptimizer(problem.space, seed=0, checkpoint=path)
    params = opt.ask()
    opt.tell(params, problem.objective(params))
    del opt
    for strategy in variants:
        with pytest.raises(CheckpointMismatchError):
            TreeOptimizer(problem.space, seed=0, checkpoint=path, strategy=strategy)
    TreeOptimizer(problem.space, seed=0, checkpoint=path, strategy=AddTreeStrategy())
