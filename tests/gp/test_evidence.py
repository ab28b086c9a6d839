"""Evidence for outliers: the marginal likelihood on the given scale, and the odds."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo.gp.evidence import log_evidence, outlier_log_odds


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
