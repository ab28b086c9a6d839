"""The run's noise declaration: validation, the fitted noise, known noise, and the
recommended configuration."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from treebo import TreeOptimizer, minimize
from treebo.add_tree import AddTreeOptions, AddTreeStrategy
from treebo.gp.noise import INFERRED_NOISE_FLOOR, validate_noise
from treebo.space import ConfigurationError
from treebo.test_functions import Jenatton

#: The loop's model without its alternative kernel (one fit per proposal).
ONE_KERNEL = AddTreeOptions(alternative_kernels=(), num_restarts=4, raw_samples=64)


def told(noise="infer", n=30, sd=0.0, seed=0) -> TreeOptimizer:
    """An optimizer told ``n`` random Jenatton configurations (plus noise ``sd``)."""
    problem = Jenatton()
    opt = TreeOptimizer(
        problem.space, seed=seed, noise=noise, strategy=AddTreeStrategy(ONE_KERNEL)
    )
    rng = np.random.default_rng(seed)
    X = problem.space.sample(n, seed=seed)
    for params in problem.space.to_dicts(X):
        opt.tell(params, problem.objective(params) + sd * rng.standard_normal())
    return opt


@pytest.mark.parametrize(
    "noise", ["infer", "deterministic", 0.5, 0, np.float64(0.1), 3, 1e-12]
)
def test_valid_declarations(noise):
    value = validate_noise(noise)
    assert value in ("infer", "deterministic") or value == float(noise)


@pytest.mark.parametrize(
    "noise", ["noisy", -0.1, math.nan, math.inf, True, None, [0.1], "0.1"]
)
def test_bad_declarations_are_refused_by_name_before_any_evaluation(noise):
    with pytest.raises(ConfigurationError, match="noise"):
        TreeOptimizer(Jenatton().space, noise=noise)
    calls = []
    with pytest.raises(ConfigurationError, match="noise"):
        minimize(lambda p: calls.append(p) or 0.0, Jenatton().space, 5, noise=noise)
    assert calls == []


@pytest.mark.parametrize(
    "strategy", ["jenatton_tree", "independent", "treed", "tree_additive", "bktf"]
)
@pytest.mark.parametrize("noise", [0.1, "deterministic"])
def test_a_declaration_a_strategy_cannot_honour_is_refused_by_name(strategy, noise):
    from treebo import Real, TreeSpace, Vertex

    space = TreeSpace(Vertex([Real("a", 0.0, 1.0), Real("b", 0.0, 1.0)]))
    with pytest.raises(ConfigurationError, match=f"noise: strategy='{strategy}'"):
        TreeOptimizer(space, strategy=strategy, noise=noise)
    calls = []
    with pytest.raises(ConfigurationError, match="noise"):
        minimize(
            lambda p: calls.append(p) or 0.0, space, 5, strategy=strategy, noise=noise
        )
    assert calls == []
    TreeOptimizer(space, strategy=strategy, noise="infer")  # what they honour


def test_a_standard_error_needs_known_noise_and_a_real_value():
    opt = TreeOptimizer(Jenatton().space, seed=0)
    params = opt.ask()
    with pytest.raises(ConfigurationError, match="sem: .* noise='infer'"):
        opt.tell(params, 1.0, sem=0.1)
    known = TreeOptimizer(Jenatton().space, seed=0, noise=0.01)
    for bad in (-1.0, math.nan, "0.1"):
        with pytest.raises(ConfigurationError, match="sem"):
            known.tell(params, 1.0, sem=bad)
    assert len(known.history) == 0


@pytest.mark.full_optimizers  # checks what the fit finds
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_fitted_noise_of_a_smooth_deterministic_function_ends_near_its_floor(
    seed,
):
    opt = told(seed=seed)
    model = opt.strategy.fit(opt.observations())
    assert float(model.likelihood.noise.detach()) <= 10 * INFERRED_NOISE_FLOOR


@pytest.mark.full_optimizers  # checks what the fit finds
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_fitted_noise_of_a_noisy_function_is_within_3x_of_the_truth(seed):
    sd = 0.1
    opt = told(n=40, sd=sd, seed=seed)
    obs = opt.observations()
    model = opt.strategy.fit(obs)
    # The truth on the standardized scale: sd^2 over the scores' variance.
    truth = sd**2 / float(opt.history.values.var())
    fitted = float(model.likelihood.noise.detach())
    assert truth / 3 <= fitted <= 3 * truth, (fitted, truth)


def test_known_noise_reaches_the_model_as_train_yvar():
    opt = told(noise=0.04, n=12)
    params = opt.history[0].params
    opt.tell(params | {}, 0.3, sem=0.5)  # one evaluation with its own error
    obs = opt.observations()
    model = opt.strategy.fit(obs)
    scale = float(opt.history.values.std())
    expected = torch.full((13,), 0.04 / scale**2, dtype=torch.float64)
    expected[-1] = 0.25 / scale**2
    torch.testing.assert_close(obs.yvar.squeeze(-1), expected)
    # AddTreeGP standardizes again: the likelihood holds Yvar / std(y)^2.
    noise = model.likelihood.noise.squeeze()
    ratio = noise / expected
    torch.testing.assert_close(ratio, ratio[:1].expand_as(ratio))


def dense_posterior(model) -> tuple[torch.Tensor, torch.Tensor]:
    """The posterior mean and latent variance at the training inputs, from the kernel
    matrices: ``m + K (K + N)^-1 (t - m)`` and ``diag(K - K (K + N)^-1 K)``, back on
    the outcomes' scale."""
    with torch.no_grad():
        X, t = model.train_inputs[0], model.train_targets
        K = model.covar_module(X).to_dense()
        m = model.mean_module(X)
        N = torch.diag_embed(model.likelihood.noise.expand_as(t))
        f = m + K @ torch.linalg.solve(K + N, t - m)
        v = torch.diagonal(K - K @ torch.linalg.solve(K + N, K))
        mean = model.outcome_transform.untransform(f.unsqueeze(-1))[0].squeeze(-1)
        scale = model.outcome_transform.stdvs.squeeze()
        return mean, v * scale**2


def test_the_recommendation_under_noise_is_the_best_posterior_mean():
    import copy

    opt = told(n=30, sd=0.3, seed=3)
    result = opt.result()
    obs = opt.observations()
    predicted = opt.strategy.predict(obs)
    assert predicted is not None
    mean = predicted.mean
    # A dense reference: the same fit, its posterior from the kernel matrices.
    model = copy.deepcopy(opt.strategy).fit(obs)
    dense_mean, dense_variance = dense_posterior(model)
    torch.testing.assert_close(dense_mean, mean)
    torch.testing.assert_close(dense_variance, predicted.variance)
    index = int(mean.argmax())  # scores are maximized; the run minimizes
    assert result.best_params == opt.history[index].params
    assert result.recommended_by == "model"
    # best_value is that prediction in the objective's units, with its sd.
    values = -opt.history.values
    z = (values - values.mean()) / values.std()
    slope = float(values.std())
    predicted_value = -(float(mean[index]) * slope + float(values.mean()))
    assert result.best_value == pytest.approx(predicted_value, rel=1e-9)
    sd = float(predicted.variance[index]) ** 0.5 * slope
    assert result.best_value_sd == pytest.approx(sd, rel=1e-9)
    assert torch.allclose(z.unsqueeze(-1), obs.y)
    assert result.best_observed_value == float(opt.history.values.min())
    best = int(opt.history.values.argmin())
    assert result.best_observed_params == opt.history[best].params
    # The prediction does not touch the run: the next proposal is unchanged.
    again = told(n=30, sd=0.3, seed=3)
    assert opt.ask() == again.ask()


def test_a_checkpoint_returns_the_runs_recommendation(tmp_path):
    from treebo.loop.checkpoint import read_checkpoint

    problem = Jenatton()
    rng = np.random.default_rng(0)

    def noisy(params):
        return problem.objective(params) + 0.3 * rng.standard_normal()

    path = tmp_path / "run.jsonl"
    result = minimize(noisy, problem.space, budget=8, seed=0, checkpoint=path,
                      strategy=AddTreeStrategy(ONE_KERNEL))  # fmt: skip
    assert result.recommended_by == "model"
    assert result.best_value != result.best_observed_value  # a prediction
    read = read_checkpoint(path, problem.space)
    assert read.best_params == result.best_params
    assert read.best_value == result.best_value
    assert read.best_value_sd == result.best_value_sd
    assert read.describe() == result.describe()
    # One more trial, told without a result: the journal's recommendation is stale,
    # and the checkpoint's best observation stands in, labelled as such.
    strategy = AddTreeStrategy(ONE_KERNEL)
    opt = TreeOptimizer(problem.space, seed=0, checkpoint=path, strategy=strategy)
    params = opt.ask()
    opt.tell(params, noisy(params))
    opt.close()
    read = read_checkpoint(path, problem.space)
    assert read.recommended_by == "observation"
    assert read.best_params == read.best_observed_params


def test_a_deterministic_run_recommends_its_best_observation():
    opt = told(noise="deterministic", n=12)
    result = opt.result()
    best = int(opt.history.values.argmin())
    assert result.best_params == opt.history[best].params
    assert result.best_value == result.best_observed_value == opt.history[best].value
