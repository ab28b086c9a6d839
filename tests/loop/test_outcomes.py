"""Outcomes: what counts as a value, standardized scores, scale invariance."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from treebo import TreeOptimizer
from treebo.add_tree import AddTreeOptions, AddTreeStrategy
from treebo.loop.outcomes import parse_outcome, raise_far_out, standardize_scores
from treebo.test_functions import Jenatton

FAST = AddTreeOptions(num_restarts=4, raw_samples=64)


@pytest.mark.parametrize(
    "value, expected",
    [
        (2, 2.0),
        (np.float32(0.5), 0.5),
        (np.int64(3), 3.0),
        (torch.tensor([1.5]), 1.5),
        (np.array(-2.0), -2.0),
        (1e300, 1e300),
    ],
)
def test_real_numbers_are_values(value, expected):
    parsed, error = parse_outcome(value)
    assert error is None and parsed == expected and type(parsed) is float


@pytest.mark.parametrize(
    "value, reason",
    [
        ("0.5", "'0.5' (type str)"),
        (True, "True (type bool)"),
        (np.bool_(False), "False (type bool)"),
        (1 + 2j, "type complex"),
        (torch.tensor([1.0, 2.0]), "Tensor of 2 elements"),
        (None, "returned None"),
        (math.nan, "returned nan"),
        (-math.inf, "returned -inf"),
        (ZeroDivisionError("boom"), "ZeroDivisionError: boom"),
    ],
)
def test_everything_else_is_a_failure_with_its_reason(value, reason):
    parsed, error = parse_outcome(value)
    assert parsed is None and reason in error


def test_standardized_scores_match_the_textbook_formula_and_rank_failures_last():
    s = torch.tensor([3.0, -1.0, math.nan, 0.5, 2.0], dtype=torch.float64)
    ok = s[~s.isnan()]
    expected = (s - ok.mean()) / ok.std()
    out = standardize_scores(s)
    torch.testing.assert_close(out[~s.isnan()], expected[~s.isnan()])
    assert out[2] == out.min()
    assert torch.equal(standardize_scores(torch.tensor([math.nan])), torch.zeros(1))
    assert torch.equal(standardize_scores(torch.tensor([4.0, 4.0])), torch.zeros(2))


@pytest.mark.parametrize("c, b", [(1e-8, 0.0), (1e-300, 0.0), (1e300, 0.0), (3.0, 1e3)])
def test_standardized_scores_do_not_see_scale_or_shift(c, b):
    s = torch.tensor([3.0, -1.0, math.nan, 0.5, 2.0, -0.25], dtype=torch.float64)
    out = standardize_scores(c * s + b)
    assert out.isfinite().all()
    torch.testing.assert_close(out, standardize_scores(s), rtol=0, atol=1e-9)


def test_one_diverged_score_leaves_the_others_spread():
    s = torch.linspace(0.0, 1.0, 27, dtype=torch.float64)
    out = standardize_scores(torch.cat([s, s.new_tensor([-1e300])]))
    # Without the fence the 27 good scores would all sit within 1e-290 of
    # each other; with it they keep the spread and order of the clean run.
    assert out[:27].std() > 0.5
    assert bool((out[:27].diff() > 0).all())
    assert out[27] == out.min()


@pytest.mark.parametrize("c, b", [(1e-6, 5.0), (1e250, -1.0), (7.0, 0.0)])
def test_the_fence_moves_with_scale_and_shift(c, b):
    s = torch.tensor([0.3, 2.0, -0.4, 1.1, -50.0, 0.9, 1.7], dtype=torch.float64)
    raised = raise_far_out(s)
    assert raised[4] > -50.0 and raised[4] == raised.min()
    torch.testing.assert_close(raise_far_out(c * s + b), c * raised + b)
    torch.testing.assert_close(
        standardize_scores(c * s + b), standardize_scores(s), rtol=0, atol=1e-9
    )


def test_nothing_is_raised_when_the_quartiles_tie_or_the_bad_tail_is_near():
    tied = torch.tensor([1.0, 1.0, 1.0, 1.0, -9.0], dtype=torch.float64)
    assert torch.equal(raise_far_out(tied), tied)
    near = torch.tensor([0.0, 1.0, 2.0, 3.0, -2.0], dtype=torch.float64)
    assert torch.equal(raise_far_out(near), near)


def test_huge_values_keep_the_model_finite_and_in_charge():
    problem = Jenatton()
    opt = TreeOptimizer(
        problem.space, seed=0, n_initial=5, strategy=AddTreeStrategy(FAST)
    )
    for i in range(8):
        params = opt.ask()
        opt.tell(params, 1e300 if i == 2 else problem.objective(params))
    assert [t.kind for t in opt.history[5:]] == ["bo"] * 3
    mean = opt.last_model.posterior(opt.history.X).mean
    assert mean.isfinite().all()


def test_bad_outcomes_are_recorded_failures_and_a_run_of_them_warns():
    problem = Jenatton()
    opt = TreeOptimizer(problem.space, seed=0, n_initial=5)
    first = opt.ask()
    assert opt.tell(first, "0.5").error.startswith("objective returned '0.5'")
    assert opt.tell(opt.ask(), True).status == "failed"
    with pytest.warns(RuntimeWarning, match="first 3 evaluations all failed"):
        opt.tell(opt.ask(), None)
    with pytest.warns(RuntimeWarning, match="none of the 3 evaluations succeeded"):
        assert opt.result().best_params is None
    assert torch.isnan(opt.history.values).all()


# Interpolation puts the noise on its floor, the same for every scale; an inferred
# noise is an interior optimum that the fit finds to L-BFGS's tolerance only.
@pytest.mark.full_optimizers  # the fits must converge
@pytest.mark.parametrize("noise, tol", [("deterministic", 1e-6), ("infer", 1e-3)])
def test_scaled_and_shifted_objectives_get_the_same_proposals(noise, tol):
    problem = Jenatton()

    def proposals(c: float, b: float) -> list[dict]:
        opt = TreeOptimizer(
            problem.space,
            seed=1,
            n_initial=5,
            strategy=AddTreeStrategy(FAST),
            noise=noise,
        )
        for _ in range(8):
            params = opt.ask()
            opt.tell(params, c * problem.objective(params) + b)
        return [t.params for t in opt.history]

    reference = proposals(1.0, 0.0)
    for c, b in [(1e-8, 0.0), (1e6, -3.0), (2.0, 1e3)]:
        other = proposals(c, b)
        for ours, theirs in zip(other, reference, strict=True):
            assert ours.keys() == theirs.keys()
            for name, value in ours.items():
                if isinstance(value, float):
                    assert value == pytest.approx(theirs[name], abs=tol), (c, b, name)
                else:
                    assert value == theirs[name]
