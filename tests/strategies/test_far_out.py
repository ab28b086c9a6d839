"""Far-out scores: kept as observations or left out as outliers, by the evidence."""

from __future__ import annotations

import copy

import pytest
import torch

from treebo import TreeOptimizer
from treebo.add_tree import AddTreeStrategy
from treebo.loop import initial_design
from treebo.loop.outcomes import raise_far_out
from treebo.space import Choice, Real, TreeSpace, Vertex
from treebo.strategies.base import Observations
from treebo.strategies.far_out import far_out_rows, leave_out, screen_far_out
from treebo.test_functions import Jenatton


def two_branches() -> TreeSpace:
    return TreeSpace(
        Vertex(
            [Real("x", 0.0, 1.0)],
            [
                Choice(
                    "branch",
                    {"a": Vertex([Real("u", 0, 1)]), "b": Vertex([Real("v", 0, 1)])},
                )
            ],
        )
    )


def observed(space: TreeSpace, X: torch.Tensor, values: torch.Tensor) -> Observations:
    """Observations of ``values`` to maximize as the loop makes them: far-out scores
    raised to the fence, then standardized."""
    y = raise_far_out(values)
    y = ((y - y.mean()) / y.std()).unsqueeze(-1)
    return Observations(
        space=space,
        X=X,
        y=y,
        failed=torch.zeros(len(y), dtype=torch.bool),
        kinds=("bo",) * len(y),
        X_pending=torch.empty(0, space.dim, dtype=torch.float64),
        seed=0,
        n_initial=4,
    )


def branch_data(n_bad: int, diverged: int | None = None) -> Observations:
    """20 smooth scores on branch ``a`` and ``n_bad`` scores near -10 on ``b``;
    with ``diverged``, that row of branch ``a`` returned -1e300 instead."""
    space = two_branches()
    X = space.sample(80, seed=1)
    configs = space.to_dicts(X)
    a = [i for i, c in enumerate(configs) if c["branch"] == "a"][:20]
    b = [i for i, c in enumerate(configs) if c["branch"] == "b"][:n_bad]
    X, configs = X[a + b], [configs[i] for i in a + b]
    values = torch.tensor(
        [
            torch.sin(torch.tensor(3 * c["x"] + 2 * c["u"])).item()
            if c["branch"] == "a"
            else -10 + 0.3 * c["v"]
            for c in configs
        ],
        dtype=torch.float64,
    )
    if diverged is not None:
        values[diverged] = -1e300
    return observed(space, X, values)


def test_far_out_rows_are_the_rows_the_loop_raised_to_the_fence():
    values = torch.tensor([0.3, 0.1, -0.2, 0.4, 0.0, 0.2, -1e300, -50.0])
    raised = raise_far_out(values)
    y = ((raised - raised.mean()) / raised.std()).unsqueeze(-1)
    rows = far_out_rows(y, torch.zeros(8, dtype=torch.bool))
    assert rows.tolist() == (raised != values).tolist()
    failed = torch.tensor([False] * 6 + [True, False])
    assert far_out_rows(y, failed).tolist() == [False] * 7 + [True]
    assert not far_out_rows(y[:3], failed[:3]).any()  # too few to tell
    assert not far_out_rows(torch.ones(6, 1), torch.zeros(6, dtype=torch.bool)).any()


def test_leave_out_restandardizes_the_rest_and_keeps_their_order():
    obs = branch_data(2, diverged=0)
    obs = Observations(**{**vars(obs), "yvar": torch.full_like(obs.y, 0.01)})
    rows = far_out_rows(obs.y, obs.failed)
    reduced, shift, scale = leave_out(obs, rows)
    assert reduced.X.shape[0] == obs.X.shape[0] - int(rows.sum())
    assert len(reduced.kinds) == reduced.X.shape[0]
    assert torch.allclose(reduced.X, obs.X[~rows])
    assert torch.allclose(reduced.y * scale + shift, obs.y[~rows])
    assert float(reduced.y.mean()) == pytest.approx(0.0, abs=1e-12)
    assert float(reduced.y.std()) == pytest.approx(1.0)
    assert torch.allclose(reduced.yvar, torch.full_like(reduced.y, 0.01 / scale**2))


def test_without_far_out_scores_nothing_is_fitted():
    obs = branch_data(0)
    strategy = AddTreeStrategy()
    before = copy.deepcopy(strategy.fitter.state_dict())
    assert screen_far_out(obs, strategy) == (obs, None)
    assert strategy.fitter.state_dict() == before


def test_a_diverged_evaluation_leaves_the_model_and_is_not_proposed_again():
    obs = branch_data(0, diverged=3)
    rows = far_out_rows(obs.y, obs.failed)
    assert rows.tolist() == [i == 3 for i in range(20)]
    strategy = AddTreeStrategy()
    screened, model = screen_far_out(obs, strategy)
    assert screened.X.shape[0] == 19
    assert torch.equal(screened.X_pending, obs.X[3:4])
    assert model.train_inputs[0].shape[0] == 19
    assert strategy.last_model is model


def test_a_branch_whose_scores_all_agree_stays_in_the_model():
    obs = branch_data(6)
    assert int(far_out_rows(obs.y, obs.failed).sum()) == 6
    strategy = AddTreeStrategy()
    screened, model = screen_far_out(obs, strategy)
    assert screened is obs
    assert model.train_inputs[0].shape[0] == 26
    assert strategy.last_model is model


def test_a_run_with_a_diverged_evaluation_resumes_exactly(tmp_path):
    """The screen's two fits and the state it keeps are part of the checkpoint."""
    problem = Jenatton("paper")
    bad = initial_design(problem.space, 5, 2)[1]

    def objective(params: dict) -> float:
        return 1e300 if params == bad else problem.objective(params)

    def run(opt: TreeOptimizer, n: int) -> None:
        for _ in range(n):
            params = opt.ask()
            opt.tell(params, objective(params))

    kwargs = {"seed": 2, "n_initial": 5}
    whole = TreeOptimizer(problem.space, **kwargs)
    run(whole, 9)
    assert whole.history[1].params == bad and whole.history[1].value == 1e300
    path = tmp_path / "run.json"
    first = TreeOptimizer(problem.space, checkpoint=path, **kwargs)
    run(first, 7)
    del first  # killed after 7 evaluations
    resumed = TreeOptimizer(problem.space, checkpoint=path, **kwargs)
    run(resumed, 2)
    assert [t.params for t in resumed.history] == [t.params for t in whole.history]
    assert sum(t.params == bad for t in whole.history) == 1
    # The last proposal's model left the diverged evaluation out.
    assert whole.strategy.last_model.train_inputs[0].shape[0] == 9 - 2
