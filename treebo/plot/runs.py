"""Plots of runs: best value so far, trials by path, evaluations per path, timing,
and a slice per parameter."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from treebo.loop.history import OptimizationResult
from treebo.plot.base import (
    OTHER_COLOUR,
    Runs,
    figure_axes,
    legend_outside,
    path_colours,
    path_label,
    path_legend_label,
    pyplot,
    run_direction,
    say_empty,
    value_range,
)
from treebo.space import TreeSpace


def best_so_far_curves(runs: Runs, maximize: bool | None = None) -> np.ndarray:
    """``r x n`` best value after each evaluation of ``r`` runs (shorter runs
    are extended with their last value; NaN before a run's first success)."""
    runs = [runs] if isinstance(runs, OptimizationResult) else list(runs)
    if not runs:
        raise ValueError("runs must hold at least one OptimizationResult.")
    maximize = run_direction(runs, maximize)
    curves = [np.asarray(r.best_so_far(maximize), dtype=float) for r in runs]
    n = max(len(c) for c in curves)
    out = np.full((len(curves), n), np.nan)
    for row, curve in zip(out, curves, strict=True):
        row[: len(curve)] = curve
        if 0 < len(curve) < n:
            row[len(curve) :] = curve[-1]
    return out


def plot_best_so_far(
    runs: Runs | Mapping[str, Runs],
    maximize: bool | None = None,
    log_y: bool | None = None,
    ax: Any = None,
) -> Any:
    """Best value against evaluations: the median over runs (a step curve) with its
    interquartile band, one curve per method.

    Args:
        runs: One result, the results of several seeds, or ``{label: runs}``.
        maximize: Whether larger values are better (default: as the runs were made).
        log_y: A logarithmic value axis; default: where every value is positive and
            they span more than two decades (regrets, losses near zero).
        ax: Axes to draw into (default: a new figure).
    """
    fig, ax = figure_axes(ax)
    groups = dict(runs) if isinstance(runs, Mapping) else {"treebo": runs}
    drawn = []
    for label, group in groups.items():
        curves = best_so_far_curves(group, maximize)
        if not np.isfinite(curves).any():
            continue
        x = np.arange(1, curves.shape[1] + 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
            low, mid, high = np.nanpercentile(curves, [25, 50, 75], axis=0)
        n = curves.shape[0]
        (line,) = ax.step(
            x, mid, where="post", label=f"{label} ({n} run{'s' if n > 1 else ''})"
        )
        if n > 1:
            ax.fill_between(
                x, low, high, step="post", color=line.get_color(), alpha=0.2
            )
        drawn.append(curves[np.isfinite(curves)])
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best value so far")
    if not drawn:
        say_empty(ax, "no successful evaluations")
        return fig
    values = np.concatenate(drawn)
    if log_y is None:
        log_y = bool(values.min() > 0 and values.max() > 100 * values.min())
    if log_y:
        ax.set_yscale("log")
    ax.legend()
    return fig


def plot_trials(result: OptimizationResult, space: TreeSpace, ax: Any = None) -> Any:
    """Every trial's value against its index, coloured by its path (the
    ``MAX_PATHS_SHOWN`` most evaluated; the others grey, counted in the legend, which
    sits outside the axes); failed trials as red crosses in a strip along the bottom
    of the axes (they have no value).

    Args:
        result: A run.
        space: Its search space.
        ax: Axes to draw into (default: a new figure).
    """
    fig, ax = figure_axes(ax)
    paths = [path_label(space, t.params) for t in result.history]
    ok = [t.value is not None for t in result.history]
    values = np.array([np.nan if t.value is None else t.value for t in result.history])
    colours = path_colours(paths)
    for label in colours:  # the most evaluated first, the grey ones last
        idx = [
            i
            for i, (p, good) in enumerate(zip(paths, ok, strict=True))
            if p == label and good
        ]
        if idx:
            ax.scatter(idx, values[idx], s=18, color=colours[label],
                       label=path_legend_label(label, colours))  # fmt: skip
    failed = [i for i, good in enumerate(ok) if not good]
    if failed:
        # A shaded strip below the values, kept clear of them: failures have none.
        low, high = ax.get_ylim()
        ax.set_ylim(low - 0.15 * (high - low), high)
        strip = ax.get_xaxis_transform()  # x in data, y in axes units
        ax.add_patch(
            pyplot().Rectangle(
                (0.0, 0.0), 1.0, 0.1, transform=ax.transAxes, color="0.92", zorder=0
            )
        )
        ax.scatter(failed, [0.05] * len(failed), marker="x", c="red", label="failed",
                   transform=strip)  # fmt: skip
    ax.set_xlabel("trial")
    ax.set_ylabel("value")
    if not any(ok):
        say_empty(ax, "no successful evaluations")
    if result.history:
        legend_outside(ax)
    return fig


def plot_paths(
    result: OptimizationResult,
    space: TreeSpace,
    maximize: bool | None = None,
    ax: Any = None,
) -> Any:
    """How many evaluations each path received, with its best value: the
    ``MAX_PATHS_SHOWN`` most evaluated paths, then one bar for all the others.

    Args:
        result: A run.
        space: Its search space.
        maximize: Whether larger values are better (default: as the run was made).
        ax: Axes to draw into (default: a new figure).
    """
    counts: dict[str, int] = {}
    best: dict[str, float] = {}
    better = max if run_direction([result], maximize) else min
    colours = path_colours([path_label(space, t.params) for t in result.history])
    for trial in result.history:
        label = path_legend_label(path_label(space, trial.params), colours)
        counts[label] = counts.get(label, 0) + 1
        if trial.value is not None:
            best[label] = better(best.get(label, trial.value), trial.value)
    labels = list(counts)
    if ax is None:
        fig, ax = pyplot().subplots(figsize=(6.4, 1.2 + 0.32 * len(labels)),
                                    layout="constrained")  # fmt: skip
    fig = ax.figure
    bars = ax.barh(labels, [counts[k] for k in labels],
                   color=[colours.get(k, OTHER_COLOUR) for k in labels])  # fmt: skip
    ax.bar_label(
        bars,
        labels=[f"best {best[k]:.4g}" if k in best else "all failed" for k in labels],
    )
    ax.set_xlabel("evaluations")
    ax.invert_yaxis()
    return fig


def plot_timing(result: OptimizationResult, ax: Any = None) -> Any:
    """Seconds spent proposing and evaluating each trial.

    Args:
        result: A run.
        ax: Axes to draw into (default: a new figure).
    """
    fig, ax = figure_axes(ax)
    x = np.arange(len(result.history))
    ax.plot(x, [t.proposal_seconds for t in result.history], label="proposal")
    ax.plot(x, [t.eval_seconds for t in result.history], label="evaluation")
    ax.set_xlabel("trial")
    ax.set_ylabel("seconds")
    ax.legend()
    return fig


def _plotted(param: Any, value: Any) -> Any:
    """A value as an axis takes it: a label as its string (a categorical axis)."""
    numeric = isinstance(value, (int, float)) and hasattr(param, "log_scale")
    return value if numeric else str(value)


def plot_slice(
    result: OptimizationResult,
    space: TreeSpace,
    params: Sequence[str] | None = None,
    log_y: bool = False,
) -> Any:
    """The value of every successful trial against each parameter, one panel per
    parameter, coloured by path (Optuna's slice plot); a log-scale parameter gets a
    log axis, and a trial appears in a parameter's panel only where the parameter is
    active.

    Args:
        result: A run.
        space: Its search space.
        params: The parameters to draw (default: all, the space's order).
        log_y: A logarithmic value axis.

    Returns:
        A figure with one axes per parameter.
    """
    from matplotlib.ticker import NullFormatter

    names = list(space.parameter_names if params is None else params)
    unknown = [n for n in names if n not in space.columns]
    if unknown:
        raise ValueError(f"params: {unknown} are not parameters of the space.")
    columns = min(len(names), 4)
    rows = -(-len(names) // columns)
    fig, axes = pyplot().subplots(
        rows, columns, figsize=(3.2 * columns, 2.8 * rows), squeeze=False,
        sharey=True, layout="constrained",
    )  # fmt: skip
    trials = [t for t in result.history if t.value is not None]
    paths = [path_label(space, t.params) for t in trials]
    colours = path_colours(paths)
    for ax, name in zip(axes.flat, names, strict=False):
        param = space.columns[name].param
        on = [(t, p) for t, p in zip(trials, paths, strict=True) if name in t.params]
        for label in [k for k in colours if any(p == k for _, p in on)]:
            mine = [t for t, p in on if p == label]
            ax.scatter([_plotted(param, t.params[name]) for t in mine],
                       [t.value for t in mine], s=14, color=colours[label],
                       label=path_legend_label(label, colours))  # fmt: skip
        if getattr(param, "log_scale", False):
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
        if hasattr(param, "lower") or hasattr(param, "low"):
            low, high = value_range(param)
            pad = 0.5 if not hasattr(param, "lower") and not param.log_scale else 0.0
            ax.set_xlim(low - pad, high + pad)
        ax.set_xlabel(name)
        if not on:
            say_empty(ax, "never active")
    for ax in axes.flat[len(names) :]:
        ax.set_axis_off()
    for ax in axes[:, 0]:
        ax.set_ylabel("value")
        if log_y:
            ax.set_yscale("log")
    if trials:
        handles, labels = [], []
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
        fig.legend(handles, labels, loc="outside lower center", fontsize="small",
                   ncols=min(len(labels), 4))  # fmt: skip
    return fig
