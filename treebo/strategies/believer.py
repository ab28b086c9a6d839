r"""Pending evaluations believed at the model's prediction (the kriging believer).

With parallel or asynchronous workers, configurations are asked for before earlier ones
are told. Each pending configuration $x_p$ is added to the data with the posterior mean
$\mu(x_p)$ of the model fitted to the finished evaluations as its value, and the model
is rebuilt on that data with the same hyper-parameters (no refit). Its variance at the
pending points drops to the noise floor, so the acquisition turns elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from botorch.models.model import Model
from torch import Tensor

from treebo.strategies.fitting import raw_hyperparameters


def believe_pending(
    model: Model,
    X: Tensor,
    y: Tensor,
    X_pending: Tensor,
    rebuild: Callable[[Tensor, Tensor, float], Model],
) -> tuple[Model, Tensor, Tensor]:
    """Condition ``model`` on ``X_pending`` at its own posterior mean.

    Args:
        model: A fitted single-outcome GP of ``X``, ``y`` with a Gaussian likelihood
            (e.g. [`AddTreeGP`][treebo.add_tree.model.AddTreeGP]), in eval mode.
        X: ``n x d`` training inputs.
        y: ``n x 1`` training targets.
        X_pending: ``p x d`` pending configurations.
        rebuild: ``rebuild(X, y, noise_floor)`` builds an unfitted model of
            the same family (its hyper-parameters are then copied over).

    Returns:
        The model of the augmented data in eval mode, and that data
        (``(n + p) x d``, ``(n + p) x 1``).

    Example:
        >>> from treebo import TreeOptimizer
        >>> from treebo.test_functions import Jenatton
        >>> problem = Jenatton()
        >>> opt = TreeOptimizer(problem.space, seed=0, n_initial=6)
        >>> for _ in range(7):  # six initial points, then one model-based
        ...     params = opt.ask()
        ...     _ = opt.tell(params, problem.objective(params))
        >>> obs = opt.observations()
        >>> build = opt.strategy.model_fit.rebuild(obs)  # (X, y, floor) -> model
        >>> pending = obs.space.sample(2, seed=1)
        >>> believer, X_aug, y_aug = believe_pending(
        ...     opt.last_model, obs.X, obs.y, pending, build)
        >>> X_aug.shape, y_aug.shape
        (torch.Size([9, 9]), torch.Size([9, 1]))
    """
    with torch.no_grad():
        mean = model.posterior(X_pending.to(X)).mean
    X_aug = torch.cat([X, X_pending.to(X)])
    y_aug = torch.cat([y, mean.reshape(-1, 1)])
    constraint = getattr(model.likelihood.noise_covar, "raw_noise_constraint", None)
    # A fixed-noise likelihood (known variances) has no constraint: its smallest one.
    if constraint is None:
        floor = model.likelihood.noise.min()
    else:
        floor = constraint.lower_bound
    believer = rebuild(X_aug, y_aug, float(floor))
    believer.load_state_dict(raw_hyperparameters(model), strict=False)
    return believer.eval(), X_aug, y_aug
