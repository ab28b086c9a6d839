"""Local refinement of the incumbent: box, path, convergence, refusals."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.acquisition import LogExpectedImprovement, UpperConfidenceBound
from botorch.models import SingleTaskGP

from treebo.add_tree import LocalStepOptions, LocalSteps, LocalStepSettings
from treebo.add_tree.local_refinement import (
    LocalBox,
    OffsetModel,
    linf_distance,
    neighbourhood,
    same_path_as,
)
from treebo.test_functions import Jenatton


def local_step(
    space, X, y, acquisition="ucb", seed=None, **settings
) -> torch.Tensor | None:
    """A local step of ``LocalSteps`` whose settings (``radius``,
    ``num_neighbors``, ``beta``) are ``settings``, the rest passed to ``step()``."""
    step_args = {
        k: settings.pop(k)
        for k in ("prior_mean", "prior_resolution", "X_pending")
        if k in settings
    }
    steps = LocalSteps(LocalStepOptions(mean="constant"), LocalStepSettings(**settings))
    return steps.step(space, X, y, acquisition, seed=seed, **step_args)


X4_OPT = 0.3


def shifted_jenatton(X: torch.Tensor) -> torch.Tensor:
    """P1(a) with the x4 optimum moved to 0.3 (so it is not a box centre or bound)."""
    left = (X[..., 0] == 0) & (X[..., 2] == 0)
    shift = (X[..., 5] - X4_OPT) ** 2 - X[..., 5] ** 2
    return Jenatton("paper")(X) + torch.where(left, shift, torch.zeros_like(shift))


def basin_data(n_far: int = 12, n_near: int = 8, spread: float = 1e-3, seed: int = 0):
    """Points everywhere, plus a cluster near the optimum of the best path."""
    space = Jenatton("paper").space
    far = space.sample(n_far, seed=seed)
    near = space.set_paths(
        space.sample(n_near, seed=seed + 1), torch.zeros(n_near, dtype=torch.long)
    )
    gen = torch.Generator().manual_seed(seed)
    near[:, 1] = spread * torch.rand(n_near, generator=gen, dtype=torch.float64)
    near[:, 5] = X4_OPT + spread * (
        2 * torch.rand(n_near, generator=gen, dtype=torch.float64) - 1
    )
    X = torch.cat([far, near])
    return space, X, -shifted_jenatton(X).unsqueeze(-1)


@pytest.mark.parametrize("radius", [0.05, 1e-4])
def test_candidate_stays_on_the_incumbent_path_inside_the_radius(radius):
    space, X, y = basin_data()
    best = X[int(y.argmax())]
    cand = local_step(space, X, y, radius=radius, seed=0)
    assert cand is not None and cand.shape == (1, space.dim)
    assert bool(same_path_as(space, cand, best)[0])
    assert linf_distance(space, cand[0], best) <= radius * (1 + 1e-12)
    # Inactive columns hold their canonical values.
    assert torch.equal(space.canonicalize(cand), cand)


@pytest.mark.full_optimizers  # checks what the optimizer finds
def test_repeated_refinement_resolves_the_optimum_far_below_the_global_scale():
    # Observed values span about 2, the basin's differences are 1e-6 and less:
    # far below what a model standardized over all points can resolve.
    space, X, y = basin_data()
    start_regret = float(-y.max()) - 0.1
    assert start_regret > 1e-7
    for step in range(14):
        cand = local_step(space, X, y, radius=0.05, seed=step)
        assert cand is not None
        X = torch.cat([X, cand])
        y = torch.cat([y, -shifted_jenatton(cand).unsqueeze(-1)])
    regret = float(-y.max()) - 0.1
    assert regret < 1e-10
    assert regret < 1e-3 * start_regret


def test_no_candidate_without_enough_points_on_the_path():
    space, X, y = basin_data(n_far=0, n_near=3)
    # Three points on the incumbent's path, |A| = 2 columns: fewer than |A| + 2.
    assert local_step(space, X, y) is None
    X4, y4 = basin_data(n_far=0, n_near=4)[1:]
    assert local_step(space, X4, y4) is not None
    # All points identical on the best path: no spread to build a box from.
    same = X4[int(y4.argmax())].repeat(5, 1)
    ones = torch.ones(5, 1, dtype=torch.float64)
    assert local_step(space, same, ones) is None


def test_repeated_points_count_once():
    space, X, y = basin_data(n_far=0, n_near=4)
    best = int(y.argmax())
    # Re-evaluations of the incumbent neither fill the |A| + 2 quota ...
    X3, y3 = X[:3], y[:3]
    inc3 = int(y3.argmax())
    rep3 = (
        torch.cat([X3, X3[inc3].repeat(4, 1)]),
        torch.cat([y3, y3[inc3].repeat(4, 1)]),
    )
    assert local_step(space, *rep3) is None
    # ... nor collapse the box: more copies than neighbours leave it as it was.
    k = 6
    reps = (
        torch.cat([X, X[best].repeat(3 * k, 1)]),
        torch.cat([y, y[best].repeat(3 * k, 1)]),
    )
    cand = local_step(space, *reps, num_neighbors=k, seed=0)
    assert cand is not None
    spread = max(linf_distance(space, x, X[best]) for x in X)
    assert 0.0 < linf_distance(space, cand[0], X[best]) <= spread * (1 + 1e-9)


# A P1(a) history on the optimal path (r8, x4), from a benchmark run: the
# incumbent sits at r8 = 0 (a bound), x4 = 4e-4, and the local box's corners
# (r8 = 0.05, x4 = +-0.1) are far from most of the nearby points.
CORNER_HISTORY = [
    (0.7137, -0.5802), (0.7709, -0.8662), (0.0, -0.1741), (0.0, 0.2741),
    (0.0, 0.0015), (0.0, 1.0), (0.0095, 0.0112), (0.05, -0.0985), (0.0, 0.0089),
    (0.0, 0.0179), (0.0, -0.0018), (0.05, 0.1015), (0.0, 0.0004), (0.0, -0.0996),
]  # fmt: skip


def corner_data(n_points: int = len(CORNER_HISTORY)):
    """P1(a), its space, and the first ``n_points`` of ``CORNER_HISTORY``
    encoded, with targets (larger is better)."""
    problem = Jenatton("paper")
    X = problem.space.to_tensor(
        [{"x1": 0, "x2": 0, "r8": r8, "x4": x4} for r8, x4 in CORNER_HISTORY[:n_points]]
    )
    return problem, problem.space, X, -problem(X).unsqueeze(-1)


@pytest.mark.full_optimizers  # checks what the optimizer finds
def test_ucb_step_refines_where_log_ei_picks_a_box_corner():
    problem, space, X, y = corner_data()
    best = X[int(y.argmax())]
    regret = float(-y.max()) - 0.1
    for seed in range(3):
        ei = local_step(space, X, y, seed=seed, acquisition="log_ei")
        ucb = local_step(space, X, y, seed=seed)
        # LogEI: the unexplored corner, whose posterior variance is the prior's.
        assert linf_distance(space, ei[0], best) == pytest.approx(0.05)
        assert float(problem(ei)) - 0.1 > 1e3 * regret
        # UCB (the default): a step near the incumbent that improves on it.
        assert linf_distance(space, ucb[0], best) < 0.01
        assert float(problem(ucb)) - 0.1 < 0.5 * regret


def test_offset_model_is_the_residual_model_shifted_by_the_offset():
    gen = torch.Generator().manual_seed(0)
    X = torch.rand(8, 2, generator=gen, dtype=torch.float64)
    model = SingleTaskGP(X, X.sin().sum(-1, keepdim=True)).eval()
    U = torch.rand(5, 1, 2, generator=gen, dtype=torch.float64)
    c = 0.7
    shifted = OffsetModel(model, lambda Z: torch.full(Z.shape[:-1], c, dtype=Z.dtype))
    post, base = shifted.posterior(U), model.posterior(U)
    torch.testing.assert_close(post.mean, base.mean + c)
    torch.testing.assert_close(post.variance, base.variance)
    # BoTorch's acquisitions score it as the shifted model.
    expected = UpperConfidenceBound(model, beta=0.3)(U) + c
    torch.testing.assert_close(UpperConfidenceBound(shifted, beta=0.3)(U), expected)
    best = torch.tensor(1.2, dtype=torch.float64)
    expected = LogExpectedImprovement(model, best_f=best - c)(U)
    torch.testing.assert_close(
        LogExpectedImprovement(shifted, best_f=best)(U), expected
    )
    # The offset's gradient reaches the inputs: d/dU of (UCB + sum(U)).
    linear = OffsetModel(model, lambda Z: Z.sum(-1))
    U1 = U.clone().requires_grad_(True)
    U2 = U.clone().requires_grad_(True)
    UpperConfidenceBound(linear, beta=0.3)(U1).sum().backward()
    UpperConfidenceBound(model, beta=0.3)(U2).sum().backward()
    torch.testing.assert_close(U1.grad, U2.grad + 1.0)


@pytest.mark.full_optimizers  # checks what the optimizer finds
@pytest.mark.parametrize("n_points", [8, len(CORNER_HISTORY)])
def test_residual_step_follows_the_prior_mean(n_points):
    problem, space, X, y = corner_data(n_points)
    regret = float(-y.max()) - 0.1
    calls = []

    def prior_mean(Z):  # an informative global model: 90% of the objective
        calls.append(Z.shape)
        return -0.9 * problem(Z)

    for seed in range(2):
        cand = local_step(space, X, y, seed=seed, prior_mean=prior_mean)
        assert bool(same_path_as(space, cand, X[int(y.argmax())])[0])
        # The residual of a smooth prior is easy to model: the step improves
        # the incumbent tenfold (the plain step does not with 8 points).
        assert float(problem(cand)) - 0.1 < 0.1 * regret
    # Called on the training rows (m x d) and on the acquisition's batches.
    assert calls[0][-1] == space.dim and len(calls) > 2


def test_a_prior_mean_is_ignored_below_its_resolution():
    problem, space, X, y = corner_data()

    def informative(Z):
        return -0.9 * problem(Z)

    def step(**kwargs):
        return local_step(space, X, y, seed=0, **kwargs)

    plain = step()
    assert not torch.equal(plain, step(prior_mean=informative))
    # The neighbourhood's values span less than 10: the prior is not used.
    for resolution, expected in [(10.0, plain),
                                 (1e-12, step(prior_mean=informative))]:  # fmt: skip
        torch.testing.assert_close(
            step(prior_mean=informative, prior_resolution=resolution), expected
        )


def test_bad_inputs_are_rejected():
    space, X, y = basin_data()
    with pytest.raises(ValueError, match="X must be n x d and y n x 1"):
        local_step(space, X, y.squeeze(-1))
    with pytest.raises(ValueError, match="radius must be > 0"):
        local_step(space, X, y, radius=0.0)
    with pytest.raises(ValueError, match="acquisition must be one of"):
        local_step(space, X, y, acquisition="ei")
    for beta in (-0.1, math.nan, True, "1"):
        with pytest.raises(ValueError, match="beta must be a finite number >= 0"):
            local_step(space, X, y, beta=beta)


def test_the_box_spans_the_nearest_and_maps_to_the_unit_cube_and_back():
    space, X, y = basin_data()
    near = neighbourhood(space, X, y, num_neighbors=5)
    assert near.columns == [1, 5]  # r8 and x4 on the best path
    assert near.nearest.numel() == 5
    box = LocalBox.around(space, X, near, radius=0.05)
    # The nearest observations are modelled and lie in the box.
    rows = near.on_path[near.nearest]
    assert set(rows.tolist()) <= set(box.rows.tolist())
    assert bool(box.contains(X[box.rows]).all())
    assert not bool(box.contains(X[:12]).any())  # the far points
    U = box.to_unit(X[box.rows])
    assert bool(((U >= 0) & (U <= 1)).all())
    torch.testing.assert_close(box.to_full(U), X[box.rows])
    # The half-widths are capped at the radius.
    width = (space.bounds[1] - space.bounds[0]).to(X)[near.columns]
    assert bool(((box.upper - box.lower) / width <= 0.1 * (1 + 1e-12)).all())


def test_linf_distance_is_infinite_across_paths():
    space = Jenatton("paper").space
    X = space.set_paths(space.sample(2, seed=0), torch.tensor([0, 3]))
    assert linf_distance(space, X[0], X[1]) == float("inf")
    assert linf_distance(space, X[0], X[0]) == 0.0


def test_pending_points_off_the_incumbents_path_change_nothing():
    space, X, y = basin_data()
    plain = local_step(space, X, y, seed=0)
    others = space.set_paths(space.sample(3, seed=5), torch.tensor([1, 2, 3]))
    torch.testing.assert_close(local_step(space, X, y, seed=0, X_pending=others), plain)


def test_parallel_local_steps_resolve_the_optimum_with_steps_in_flight():
    # Three steps always in flight, each told only after two more were asked
    # for: the pending ones must not pull the box or the model off the data.
    space, X, y = basin_data()
    start_regret = float(-y.max()) - 0.1
    pending = X[:0]
    for step in range(20):
        cand = local_step(space, X, y, radius=0.05, seed=step, X_pending=pending)
        assert cand is not None
        pending = torch.cat([pending, cand])
        if pending.shape[0] == 3:
            X = torch.cat([X, pending[:1]])
            y = torch.cat([y, -shifted_jenatton(pending[:1]).unsqueeze(-1)])
            pending = pending[1:]
    regret = float(-y.max()) - 0.1
    assert regret < 1e-8 and regret < 1e-4 * start_regret


def test_believing_keeps_the_mean_and_drops_the_variance():
    from treebo.add_tree.local_refinement import _believe

    X = torch.rand(
        10, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    model = SingleTaskGP(X, (X**2).sum(-1, keepdim=True))
    model.likelihood.noise = 1e-6
    model.eval()
    U = torch.tensor([[0.3, 0.7], [0.9, 0.1]], dtype=torch.float64)
    before = model.posterior(U)
    believer = _believe(model, U)
    after = believer.posterior(U)
    torch.testing.assert_close(after.mean, before.mean)
    assert bool((after.variance < 0.1 * before.variance).all())
    assert believer.train_inputs[0].shape[-2] == 12


def test_a_belief_that_fails_numerically_leaves_the_model_as_it_is(monkeypatch):
    from treebo.add_tree.local_refinement import _believe

    X = torch.rand(
        6, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
    )
    model = SingleTaskGP(X, X.sum(-1, keepdim=True)).eval()

    def fail(*args, **kwargs):
        raise RuntimeError("not positive definite")

    monkeypatch.setattr(model, "condition_on_observations", fail)
    assert _believe(model, X[:1] + 0.1) is model
