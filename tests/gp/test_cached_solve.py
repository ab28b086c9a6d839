"""The cached solve: a model's only component is its whole posterior."""

import torch
from botorch.models import SingleTaskGP

from treebo.gp import CachedSolveMixin


class _OneComponentGP(CachedSolveMixin, SingleTaskGP):
    """A GP whose single component is its whole kernel."""


def _model(seed: int = 0) -> _OneComponentGP:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(12, 2, generator=g, dtype=torch.float64)
    Y = 3.0 + 5.0 * torch.sin(6 * X[:, :1]) * X[:, 1:]
    model = _OneComponentGP(X, Y)
    model.covar_module.lengthscale = 0.3
    model.likelihood.noise = 1e-4
    return model.eval()


def test_the_component_moments_are_the_posterior_on_the_original_scale():
    model = _model()
    Xq = torch.rand(5, 2, dtype=torch.float64)
    X = model.train_inputs[0]
    with torch.no_grad():
        k = model.covar_module(Xq, X).to_dense()
        prior = model.covar_module(Xq, diag=True)
        mean, var = model.component_moments(k, prior, component_dims=1)
        post = model.posterior(Xq.unsqueeze(-2))
    torch.testing.assert_close(mean + model.constant_offset(), post.mean.reshape(5))
    torch.testing.assert_close(var, post.variance.reshape(5))


def test_the_cache_is_kept_in_eval_and_dropped_by_train():
    model = _model()
    cache = model.solve_cache()
    assert model.solve_cache() is cache and not cache["L"].requires_grad
    model.train()
    assert model._cached_solve is None
    model.eval()
    assert model.solve_cache() is not cache
