"""Plots read off an Add-Tree GP fitted to a run: vertex importances and a contour of
the posterior mean over two parameters."""

from __future__ import annotations

from typing import Any

import numpy as np

from treebo.loop.history import OptimizationResult
from treebo.plot.base import (
    figure_axes,
    legend_outside,
    path_label,
    say_empty,
    value_range,
)
from treebo.plot.tree import vertex_label
from treebo.space import TreeSpace


def _fitted_add_tree_gp(result: OptimizationResult, space: TreeSpace) -> tuple:
    """An Add-Tree GP (the loop's kernel, noise inferred) fitted to the run's
    successful trials, and their ``n x d`` encoding."""
    from treebo.add_tree import LOOP_KERNEL_OPTIONS, AddTreeGP
    from treebo.gp.fit import fit_model
    from treebo.gp.noise import inferred_noise_likelihood

    trials = [t for t in result.history if t.value is not None]
    if len(trials) < 3:
        raise ValueError(
            f"result: the model needs 3 successful trials, the run has {len(trials)}."
        )
    X = space.to_tensor([t.params for t in trials])
    y = X.new_tensor([t.value for t in trials]).unsqueeze(-1)
    model = AddTreeGP(
        X,
        y,
        space.tree,
        bounds=space.bounds,
        categorical_values=space.categorical_values,
        likelihood=inferred_noise_likelihood(),
        **LOOP_KERNEL_OPTIONS.as_kwargs(),
    )
    return fit_model(model), X


def plot_importances(
    result: OptimizationResult, space: TreeSpace, ax: Any = None
) -> Any:
    """How much each vertex of the tree (its parameters, and the choice that switches
    it on) moves the prediction: the variance shares of the Add-Tree posterior mean
    over the evaluated configurations
    ([`vertex_importances()`][treebo.add_tree.importance.vertex_importances]), from an
    Add-Tree GP fitted to the run (parameters that share a vertex share its bar).

    Args:
        result: A run with at least 3 successful trials.
        space: Its search space.
        ax: Axes to draw into (default: a new figure).
    """
    from treebo.add_tree.importance import vertex_importances

    model, X = _fitted_add_tree_gp(result, space)
    shares = vertex_importances(model, X).detach().cpu().numpy()
    order = np.argsort(shares)[::-1]
    order = order[shares[order] > 0]
    fig, ax = figure_axes(ax)
    ax.barh([vertex_label(space, int(v)) for v in order], shares[order])
    ax.invert_yaxis()
    ax.set_xlabel("share of the posterior mean's variance")
    if not len(order):
        say_empty(ax, "the model's mean is constant over the trials")
    return fig


def _as_value(space: TreeSpace, name: str, value: float) -> int | float:
    return int(value) if space.columns[name].role == "integer" else float(value)


def plot_contour(
    result: OptimizationResult,
    space: TreeSpace,
    x: str,
    y: str,
    resolution: int = 40,
    ax: Any = None,
) -> Any:
    """The posterior mean of an Add-Tree GP fitted to the run over two real or
    integer parameters, the others held at the recommended configuration
    (``result.best_params``), with the trials of that path as dots.

    Args:
        result: A run with at least 3 successful trials.
        space: Its search space.
        x: The parameter on the horizontal axis.
        y: The parameter on the vertical axis; both must be active in the
            recommended configuration.
        resolution: Grid points per axis.
        ax: Axes to draw into (default: a new figure).
    """
    import torch

    best = result.best_params
    for name in (x, y):
        if name not in space.columns or space.columns[name].role not in (
            "real",
            "integer",
        ):
            raise ValueError(f"{name!r} is not a real or integer parameter.")
        if best is None or name not in best:
            raise ValueError(
                f"{name!r} is not active in the recommended configuration."
            )
    model, _ = _fitted_add_tree_gp(result, space)
    axes_values = []
    for name in (x, y):
        param = space.columns[name].param
        low, high = value_range(param)
        log = param.log_scale
        grid = (
            np.geomspace(low, high, resolution)
            if log
            else np.linspace(low, high, resolution)
        )
        if space.columns[name].role == "integer":
            grid = np.unique(np.round(grid))
        axes_values.append(grid)
    gx, gy = np.meshgrid(*axes_values)
    configs = [
        {**best, x: _as_value(space, x, a), y: _as_value(space, y, b)}
        for a, b in zip(gx.ravel(), gy.ravel(), strict=True)
    ]
    Z = space.to_tensor(configs)
    with torch.no_grad():
        mean = model.posterior(Z).mean.squeeze(-1).reshape(gx.shape).cpu().numpy()
    fig, ax = figure_axes(ax)
    filled = ax.contourf(gx, gy, mean, levels=20, cmap="viridis")
    fig.colorbar(filled, ax=ax, label="posterior mean")
    label = path_label(space, best)
    on_path = [
        t
        for t in result.history
        if t.value is not None and path_label(space, t.params) == label
    ]
    ax.scatter([t.params[x] for t in on_path], [t.params[y] for t in on_path], s=12,
               c="white", edgecolors="black", label=f"trials ({label})")  # fmt: skip
    for name, setter in ((x, ax.set_xscale), (y, ax.set_yscale)):
        if getattr(space.columns[name].param, "log_scale", False):
            setter("log")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    legend_outside(ax)
    return fig
