"""Far-out scores screened by the evidence: the marginal likelihood on the given scale,
the odds of outliers, and the screen that leaves diverged evaluations out."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo import TreeOptimizer
from treebo.add_tree import AddTreeStrategy
from treebo.add_tree.outliers import (
    leave_out,
    log_evidence,
    outlier_log_odds,
    screen_far_out,
)
from treebo.loop import initial_design
from treebo.loop.outcomes import raise_far_out
from treebo.space import Choice, Real, TreeSpace, Vertex
from treebo.strategies.base import Observations
from treebo.strategies.far_out import far_out_rows
from treebo.test_functions import Jenatton


def data(n: int = 14) -> tuple[torch.Tensor, torch.Tensor]:
    X = torch.linspace(0, 1, n, dtype=torch.float64).unsqueeze(-1)
    return X, torch.sin(6 * X) + 0.1 * X


def fitted(X: torch.Tensor, y: torch.Tensor, **kwargs) -> SingleTaskGP:
    model = SingleTaskGP(X, y, **kwargs)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model.eval()


def test_log_evidence_is_the_dense_gaussian_density_plus_the_log_prior():
    X, y = data()
    model = SingleTaskGP(X, y, outcome_transform=None)
    model.covar_module.lengthscale = 0.3
    model.likelihood.noise = 1e-3
    with torch.no_grad():
        K = model.covar_module(X).to_dense() + 1e-3 * torch.eye(len(X))
        mean = model.mean_module(X)
        dense = torch.distributions.MultivariateNormal(mean, K).log_prob(y.squeeze(-1))
        prior = sum(
            p.log_prob(closure(m)).sum() for _, m, p, closure, _ in model.named_priors()
        )
    assert float(log_evidence(model)) == pytest.approx(float(dense + prior), rel=1e-9)
    assert not model.training


def test_log_evidence_moves_with_the_scale_of_the_targets():
    """With ``Standardize`` the model of ``c y + b`` is the model of ``y``: the density
    of the targets differs by the Jacobian ``n log c`` alone."""
    X, y = data()
    a = log_evidence(SingleTaskGP(X, y))
    b = log_evidence(SingleTaskGP(X, 250.0 * y - 3.0))
    assert float(a - b) == pytest.approx(len(X) * math.log(250.0), rel=1e-9)


def test_a_diverged_score_amid_smooth_neighbours_is_an_outlier():
    X, y = data()
    y[6] = y.min() - 6 * y.std()
    keep = torch.arange(len(X)) != 6
    observed, inliers = fitted(X, y), fitted(X[keep], y[keep])
    assert outlier_log_odds(observed, inliers, X[~keep], y[~keep, 0]) > 0


def test_the_odds_do_not_depend_on_the_inliers_scale():
    X, y = data()
    y[6] = y.min() - 6 * y.std()
    keep = torch.arange(len(X)) != 6
    observed = fitted(X, y)
    inliers = fitted(X[keep], y[keep])
    # The same GP of the rescaled scores: Standardize maps both to the same targets.
    shifted = SingleTaskGP(X[keep], (y[keep] - 0.5) / 4.0)
    state = inliers.state_dict()
    shifted.load_state_dict(
        {k: v for k, v in state.items() if not k.startswith("outcome_transform")},
        strict=False,
    )
    odds = outlier_log_odds(observed, inliers, X[~keep], y[~keep, 0])
    other = outlier_log_odds(
        observed, shifted.eval(), X[~keep], (y[~keep, 0] - 0.5) / 4.0, scale=4.0
    )
    assert other == pytest.approx(odds, rel=1e-6)


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
    before = copy.deepcopy(strategy.state_dict())
    assert screen_far_out(obs, strategy.model_fit) == (obs, None)
    assert strategy.state_dict() == before


def test_a_diverged_evaluation_leaves_the_model_and_is_not_proposed_again():
    obs = branch_data(0, diverged=3)
    rows = far_out_rows(obs.y, obs.failed)
    assert rows.tolist() == [i == 3 for i in range(20)]
    strategy = AddTreeStrategy()
    screened, model = strategy.screened(obs)
    assert screened.X.shape[0] == 19
    assert torch.equal(screened.X_left_out, obs.X[3:4])
    assert torch.equal(screened.X_unseen, obs.X[3:4])  # no pending: only it
    assert model.train_inputs[0].shape[0] == 19
    assert strategy.last_model is model


def test_a_branch_whose_scores_all_agree_stays_in_the_model():
    obs = branch_data(6)
    assert int(far_out_rows(obs.y, obs.failed).sum()) == 6
    strategy = AddTreeStrategy()
    screened, model = strategy.screened(obs)
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
