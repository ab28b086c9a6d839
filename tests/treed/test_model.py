import math

import pytest
import torch
from botorch.acquisition import LogExpectedImprovement, qLogNoisyExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.optim import optimize_acqf
from gpytorch.kernels import MaternKernel

from tests.treed import UnprunedTreedGP
from treebo.treed import TreedGP, WeightedPseudoLikelihood


def _data(n=30, seed=0):
    gen = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 2, generator=gen, dtype=torch.float64)
    Y = torch.where(X[:, :1] < 0.5, torch.sin(12 * X[:, 1:]), 0.3 * X[:, 1:])
    return X, Y


def _perturbed(model):
    """Give every leaf its own hyper-parameters."""
    L = model.num_leaves
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        base = model.covar_module.base_kernel
        base.outputscale = torch.rand(L, generator=gen, dtype=torch.float64) + 0.5
        base.base_kernel.lengthscale = (
            torch.rand(L, 1, 2, generator=gen, dtype=torch.float64) + 0.1
        )
        model.likelihood.noise = (
            torch.rand(L, 1, generator=gen, dtype=torch.float64) * 0.1 + 1e-3
        )
        model.mean_constant.copy_(torch.randn(L, generator=gen, dtype=torch.float64))
    return model


def _leaf_gaussian(model, leaf, rows):
    """Covariance and mean of leaf ``leaf``'s GP on training ``rows``."""
    base = model.covar_module.base_kernel
    k = MaternKernel(nu=2.5, ard_num_dims=2).to(torch.float64)
    k.lengthscale = base.base_kernel.lengthscale[leaf, 0]
    X = model.train_inputs[0][rows]
    K = base.outputscale[leaf] * k(X).to_dense()
    K = K + model.likelihood.noise[leaf, 0] * torch.eye(len(rows), dtype=X.dtype)
    return K, model.mean_constant[leaf], k


def test_pseudo_likelihood_equals_the_hand_computed_sum():
    X, Y = _data(n=24)
    model = _perturbed(TreedGP(X, Y, min_leaf_size=5, outcome_transform=None))
    part = model.partition
    assert part.max_depth >= 2  # the weights below the leaf's parent matter
    y = model.train_targets
    expected = torch.zeros((), dtype=torch.float64)
    for leaf, node in enumerate(part.leaves.tolist()):
        below, level = None, 0
        while node >= 0:
            rows = part.members[node]
            if below is not None:
                rows = rows & ~below
            idx = rows.nonzero().squeeze(-1)
            K, mean, _ = _leaf_gaussian(model, leaf, idx)
            dist = torch.distributions.MultivariateNormal(
                mean.expand(len(idx)), covariance_matrix=K
            )
            expected = expected + 2.0 / (1 + level) * dist.log_prob(y[idx])
            below, node, level = part.members[node], int(part.parent[node]), level + 1
    with torch.no_grad():
        torch.testing.assert_close(model.pseudo_log_likelihood(), expected.detach())


def test_posterior_is_the_leaf_gp_of_each_point():
    X, Y = _data()
    model = _perturbed(TreedGP(X, Y, outcome_transform=None))
    Xq = torch.rand(5, 2, dtype=torch.float64)
    leaf = model.leaf_index(Xq)
    with torch.no_grad():
        post = model.posterior(Xq)
        mean, cov = post.mean.squeeze(-1), post.mvn.covariance_matrix
        for i in range(5):
            rows = model.leaf_train_indices[int(leaf[i])]
            K, mu, k = _leaf_gaussian(model, int(leaf[i]), rows)
            scale = model.covar_module.base_kernel.outputscale[int(leaf[i])]
            kx = scale * k(Xq[i : i + 1], X[rows]).to_dense()
            resid = Y[rows, 0] - mu
            torch.testing.assert_close(
                mean[i], mu + (kx @ torch.linalg.solve(K, resid)).squeeze()
            )
            var = scale - (kx @ torch.linalg.solve(K, kx.T)).squeeze()
            torch.testing.assert_close(cov[i, i], var)
        same = leaf.unsqueeze(-1) == leaf.unsqueeze(-2)
        assert bool((cov[~same] == 0).all())  # leaves are independent


def test_many_points_at_once_match_one_at_a_time():
    # Many points are cut into several blocks per leaf; the result must not
    # depend on the layout.
    X, Y = _data()
    model = _perturbed(TreedGP(X, Y))
    Xq = torch.rand(300, 1, 2, dtype=torch.float64)
    assert model.leaf_index(Xq).unique().numel() > 1
    with torch.no_grad():
        batch = model.posterior(Xq)
        single = [model.posterior(x.unsqueeze(0)) for x in Xq[:40]]
    torch.testing.assert_close(
        batch.mean[:40], torch.cat([p.mean for p in single]), rtol=1e-10, atol=1e-12
    )
    torch.testing.assert_close(
        batch.variance[:40],
        torch.cat([p.variance for p in single]),
        rtol=1e-10,
        atol=1e-12,
    )
    empty = model.posterior(torch.rand(0, 1, 2, dtype=torch.float64))
    assert empty.mean.shape == (0, 1, 1)


def test_outcome_transform_and_observation_noise():
    X, Y = _data()
    scaled = TreedGP(X, 10 * Y + 3)
    plain = TreedGP(X, Y)
    Xq = torch.rand(4, 1, 2, dtype=torch.float64)
    with torch.no_grad():
        a, b = scaled.posterior(Xq), plain.posterior(Xq)
        torch.testing.assert_close(a.mean, 10 * b.mean + 3)
        torch.testing.assert_close(a.variance, 100 * b.variance)
        noisy = plain.posterior(Xq, observation_noise=True)
        leaf = plain.leaf_index(Xq).squeeze(-1)
        std2 = plain.outcome_transform.stdvs.square().reshape(())
        extra = plain.likelihood.noise.squeeze(-1)[leaf] * std2
        torch.testing.assert_close(
            noisy.variance.reshape(-1), b.variance.reshape(-1) + extra
        )


def test_boundary_points_belong_to_both_leaves():
    X, Y = _data(n=40)
    model = TreedGP(X, Y)
    counts = torch.zeros(40, dtype=torch.long)
    for rows in model.leaf_train_indices:
        counts[rows] += 1
    assert int(counts.min()) == 1
    assert int(counts.max()) >= 2
    assert sum(len(r) for r in model.leaf_train_indices) == 40 + int((counts - 1).sum())


def test_fitting_raises_the_pseudo_likelihood_and_warps_per_leaf():
    X, Y = _data(n=40)
    for warp in (False, True):
        model = TreedGP(X, Y, warp=warp)
        mll = WeightedPseudoLikelihood(model)
        with torch.no_grad():
            before = float(mll())
        fit_gpytorch_mll(mll, optimizer_kwargs={"options": {"maxiter": 30}})
        with torch.no_grad():
            assert float(mll()) > before
    assert model.warp.concentration0.shape == (model.num_leaves, 1, 2)


def test_botorch_acquisitions_optimize_on_a_treed_gp():
    X, Y = _data(n=30)
    model = TreedGP(X, -Y)
    fit_gpytorch_mll(
        WeightedPseudoLikelihood(model), optimizer_kwargs={"options": {"maxiter": 30}}
    )
    bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
    acqf = LogExpectedImprovement(model, best_f=float((-Y).max()))
    generator = torch.Generator().manual_seed(0)
    points = torch.rand(256, 1, 2, dtype=torch.float64, generator=generator)
    with torch.no_grad():
        random = acqf(points)
    # Gradient steps from the best random points do not lose ground.
    starts = points[random.topk(4).indices]
    _, value = optimize_acqf(
        acqf, bounds, q=1, num_restarts=4, batch_initial_conditions=starts
    )
    assert float(value) >= float(random.max()) - 1e-6
    Xq = torch.rand(3, 2, 2, dtype=torch.float64, requires_grad=True)
    nei = qLogNoisyExpectedImprovement(model, X_baseline=X, cache_root=False)
    nei(Xq).sum().backward()
    assert torch.isfinite(Xq.grad).all() and bool(Xq.grad.abs().sum() > 0)


def test_bad_input_is_refused():
    X, Y = _data(n=10)
    with pytest.raises(ValueError, match="n x 1"):
        TreedGP(X, Y.squeeze(-1))
    with pytest.raises(ValueError, match="rows"):
        TreedGP(X, Y[:5])
    with pytest.raises(ValueError, match="noise_floor"):
        TreedGP(X, Y, noise_floor=0.0)
    with pytest.raises(ValueError, match="bounds"):
        TreedGP(X, Y, bounds=torch.ones(2, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match="one output"):
        TreedGP(X, Y).posterior(X, output_indices=[1])
    assert math.isfinite(float(TreedGP(X, Y).posterior(X[:1]).mean.detach()))


def _smooth_and_rugged(X):
    """Rugged for x1 < 0.5, a smooth ramp for x1 >= 0.5."""
    x1, x2 = X[..., 0], X[..., 1]
    rugged = 0.5 * torch.sin(25 * x1) * torch.sin(25 * x2)
    return torch.where(x1 < 0.5, rugged, 3 * (x1 - 0.5) + 2 * x2**2).unsqueeze(-1)


def test_beats_a_single_gp_on_a_smooth_and_rugged_function_at_60_points():
    from botorch.models import SingleTaskGP
    from gpytorch.mlls import ExactMarginalLogLikelihood

    errors = {"treed": [], "stgp": []}
    for seed in range(5):
        gen = torch.Generator().manual_seed(seed)
        X = torch.rand(60, 2, generator=gen, dtype=torch.float64)
        X_test = torch.rand(1000, 2, generator=gen, dtype=torch.float64)
        Y, Y_test = _smooth_and_rugged(X), _smooth_and_rugged(X_test)
        treed = TreedGP(X, Y)
        assert 1 < treed.num_leaves < UnprunedTreedGP(X, Y).num_leaves
        fit_gpytorch_mll(WeightedPseudoLikelihood(treed))
        stgp = SingleTaskGP(X, Y)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(stgp.likelihood, stgp))
        with torch.no_grad():
            for name, model in (("treed", treed), ("stgp", stgp)):
                mse = (model.posterior(X_test).mean - Y_test).square().mean()
                errors[name].append(float(mse))
    assert sum(errors["treed"]) < 0.9 * sum(errors["stgp"])
