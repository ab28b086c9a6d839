"""The per-leaf models against a dense joint-Gaussian computation."""

from __future__ import annotations

import math

import pytest
import torch

from treebo import Choice, Real, TreeSpace, Vertex
from treebo.jenatton import (
    IndependentLeafGP,
    JenattonTreeGP,
    LeafLayout,
    SharedFeatures,
    fit_leaf_gp,
)
from treebo.jenatton.leaves import FEATURE_GAMMAS
from treebo.test_functions import GeneralizedJenatton, Jenatton


def randomize(model, seed=0):
    """Hyper-parameters away from their defaults (so that each one matters)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model.eval()


def dense_reference(model, X, Xq):
    """The model as one joint Gaussian over (y, c, f(Xq)), conditioned densely."""
    Xs, Xqs = model.scale_inputs(X), model.scale_inputs(Xq)
    leaf, leaf_q = model.layout.leaf_of(X), model.layout.leaf_of(Xq)

    def kernel(A, B, la, lb):
        same = (la.unsqueeze(-1) == lb.unsqueeze(-2)).to(A)
        return model.leaf_kernel(A, B, la) * same

    y = (model.train_targets - model.y_mean) / model.y_std
    b, b_q = model.leaf_mean[leaf], model.leaf_mean[leaf_q]
    K = kernel(Xs, Xs, leaf, leaf) + model.noise * torch.eye(len(X)).to(X)
    Kq = kernel(Xqs, Xs, leaf_q, leaf)
    Kqq = kernel(Xqs, Xqs, leaf_q, leaf_q)
    out = {}
    if model.features is not None and model.features.num_outputs:
        Z, Zq = model.features(Xs), model.features(Xqs)
        prior = model.coefficient_variance * torch.eye(Z.shape[-1]).to(X)
        K = K + Z @ prior @ Z.T
        Kq = Kq + Zq @ prior @ Z.T
        Kqq = Kqq + Zq @ prior @ Zq.T
        gain = torch.linalg.solve(K, Z @ prior)  # n x D
        out["c_mean"] = gain.T @ (y - b)
        out["c_cov"] = prior - prior @ Z.T @ gain
    out["mll"] = torch.distributions.MultivariateNormal(b, K).log_prob(y)
    solve = torch.linalg.solve(K, torch.cat([(y - b).unsqueeze(-1), Kq.T], -1))
    out["mean"] = b_q + Kq @ solve[:, 0]
    out["cov"] = Kqq - Kq @ solve[:, 1:]
    return out


@pytest.mark.parametrize("nonlinear", [False, True])
@pytest.mark.parametrize(
    "problem", [Jenatton(), GeneralizedJenatton(3, balanced=False)], ids=["p1", "p2"]
)
def test_closed_forms_equal_the_dense_joint_gaussian(problem, nonlinear):
    space = problem.space
    X = space.sample(17, seed=1)
    Y = problem(X).unsqueeze(-1) + 0.1 * torch.randn(17, 1, dtype=X.dtype)
    # 8 random features per gamma: D = 24 per shared vertex, more than the
    # padded rows, so the marginal likelihood takes its N x N form.
    model = randomize(JenattonTreeGP(X, Y, space, nonlinear=nonlinear, num_features=8))
    Xq = space.sample(6, seed=2)
    ref = dense_reference(model, X, Xq)
    F = model._factors()
    assert ("Lg" in F) == (nonlinear and F["A"].shape[-1] > F["A"].shape[:2].numel())
    torch.testing.assert_close(
        model.marginal_log_likelihood(), ref["mll"], rtol=0, atol=1e-8
    )
    c_mean, c_cov = model.coefficient_posterior()
    torch.testing.assert_close(c_mean, ref["c_mean"], rtol=0, atol=1e-8)
    torch.testing.assert_close(c_cov, ref["c_cov"], rtol=0, atol=1e-8)
    mean, cov = model.latent_moments(Xq)
    torch.testing.assert_close(mean, ref["mean"], rtol=0, atol=1e-8)
    torch.testing.assert_close(cov, ref["cov"], rtol=0, atol=1e-8)
    # The posterior is the same in the outcomes' units, and a batch of
    # single points gives the diagonal.
    post = model.posterior(Xq)
    torch.testing.assert_close(
        post.mean.squeeze(-1), model.y_mean + model.y_std * ref["mean"]
    )
    single = model.posterior(Xq.unsqueeze(-2))
    torch.testing.assert_close(
        single.variance.reshape(-1), post.variance.reshape(-1), rtol=1e-9, atol=1e-12
    )


def test_independent_leaf_gps_equal_the_dense_joint_gaussian():
    problem = Jenatton()
    X = problem.space.sample(15, seed=3)
    model = randomize(IndependentLeafGP(X, problem(X).unsqueeze(-1), problem.space))
    Xq = problem.space.sample(5, seed=4)
    ref = dense_reference(model, X, Xq)
    torch.testing.assert_close(
        model.marginal_log_likelihood(), ref["mll"], rtol=0, atol=1e-8
    )
    mean, cov = model.latent_moments(Xq)
    torch.testing.assert_close(mean, ref["mean"], rtol=0, atol=1e-8)
    torch.testing.assert_close(cov, ref["cov"], rtol=0, atol=1e-8)


def test_the_leaf_kernel_is_matern_52_on_the_leafs_own_columns():
    problem = Jenatton()
    X = problem.space.sample(8, seed=0)
    model = randomize(JenattonTreeGP(X, problem(X).unsqueeze(-1), problem.space))
    Xs = model.scale_inputs(X)
    leaf = model.layout.leaf_of(X)
    i, j = 0, 1
    own = model.layout.own_columns[leaf[i]]
    columns = model.leaf_columns[leaf[i]][model.leaf_column_valid[leaf[i]].bool()]
    assert sorted(columns.tolist()) == own.nonzero().flatten().tolist()
    scales = model.lengthscale[leaf[i]][: len(columns)]
    r = ((Xs[i] - Xs[j])[columns] / scales).norm()
    expected = model.outputscale[leaf[i]] * (
        (1 + math.sqrt(5) * r + 5 / 3 * r**2) * torch.exp(-math.sqrt(5) * r)
    )
    torch.testing.assert_close(model.leaf_kernel(Xs, Xs, leaf)[i, j], expected)


def test_with_no_shared_parameters_tree_equals_independent_gps():
    space = TreeSpace(
        Vertex(
            choices=[
                Choice(
                    "leaf",
                    {
                        "a": Vertex([Real("u", -1.0, 1.0)]),
                        "b": Vertex([Real("v", -1.0, 1.0), Real("w", 0.0, 2.0)]),
                        "c": Vertex([Real("t", 0.0, 1.0)]),
                    },
                )
            ]
        )
    )
    X = space.sample(20, seed=0)
    Y = torch.sin(3 * X.sum(-1, keepdim=True))
    tree = fit_leaf_gp(JenattonTreeGP(X, Y, space))
    independent = fit_leaf_gp(IndependentLeafGP(X, Y, space))
    Xq = space.sample(7, seed=1)
    for a, b in zip(
        tree.latent_moments(Xq), independent.latent_moments(Xq), strict=True
    ):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-9)


def test_random_features_approximate_the_kernel_better_as_r_grows():
    space = Jenatton().space
    layout = LeafLayout(space.tree)
    X = space.sample(40, seed=0)
    X = X[layout.leaf_of(X) == 0]  # one path: one active shared vertex (r8)
    r = X[:, layout.shared_columns[0]]
    exact = sum(
        torch.exp(-(r[:, None] - r[None, :]).square() / (2 * gamma))
        for gamma in FEATURE_GAMMAS
    ) / len(FEATURE_GAMMAS)
    errors = []
    for R in (4, 64, 1024):
        phi = SharedFeatures(layout, nonlinear=True, num_features=R, seed=0)(X)
        errors.append(float((phi @ phi.T - exact).abs().mean()))
    assert errors[0] > errors[1] > errors[2] and errors[2] < 0.03


def test_the_fit_raises_the_marginal_likelihood_and_keeps_covariances_psd():
    problem = GeneralizedJenatton(4, balanced=True)
    X = problem.space.sample(40, seed=0)
    model = JenattonTreeGP(X, problem(X).unsqueeze(-1), problem.space)
    with torch.no_grad():
        before = float(model.marginal_log_likelihood())
    fit_leaf_gp(model)
    with torch.no_grad():
        assert float(model.marginal_log_likelihood()) > before
        _, cov = model.latent_moments(problem.space.sample(9, seed=1))
    torch.testing.assert_close(cov, cov.T)
    assert float(torch.linalg.eigvalsh(cov).min()) > -1e-9


def test_bad_inputs_are_named():
    space = Jenatton().space
    X = space.sample(4, seed=0)
    with pytest.raises(ValueError, match="train_Y"):
        JenattonTreeGP(X, torch.zeros(3, 1, dtype=X.dtype), space)
    with pytest.raises(ValueError, match="columns"):
        JenattonTreeGP(X[:, :5], torch.zeros(4, 1, dtype=X.dtype), space)
    with pytest.raises(TypeError, match="nonlinear"):
        JenattonTreeGP(X, torch.zeros(4, 1, dtype=X.dtype), space, nonlinear=1)
    with pytest.raises(ValueError, match="noise_floor"):
        IndependentLeafGP(X, torch.zeros(4, 1, dtype=X.dtype), space, noise_floor=0)
