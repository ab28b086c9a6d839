"""Plots of runs: best value so far, trials by path, paths, the tree, and timing.

Each function takes [`OptimizationResult`][treebo.loop.history.OptimizationResult]
objects (what [`minimize()`][treebo.loop.run.minimize] and ``TreeOptimizer.result()``
return) and returns a matplotlib ``Figure``; "best" follows each result's direction
(``result.maximize``) unless ``maximize`` is given; pass ``ax`` to draw into an
existing axes instead. matplotlib is an optional dependency
(``pip install "treebo[plot]"``).

Example:
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from treebo import minimize
    >>> from treebo.test_functions import Jenatton
    >>> problem = Jenatton()
    >>> result = minimize(problem.objective, problem.space, budget=6, seed=0)
    >>> fig = plot_best_so_far(result)
    >>> fig.axes[0].get_xlabel()
    'evaluations'
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from treebo.loop.history import OptimizationResult
from treebo.space import TreeSpace

Runs = OptimizationResult | Sequence[OptimizationResult]


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - exercised without matplotlib
        raise ImportError(
            "treebo.plot needs matplotlib: pip install 'treebo[plot]'."
        ) from err
    return plt


def _axes(ax: Any) -> tuple[Any, Any]:
    """``(figure, axes)``: those of ``ax``, or a new figure's."""
    if ax is not None:
        return ax.figure, ax
    fig, ax = _pyplot().subplots(figsize=(6.4, 4.0))
    return fig, ax


def _direction(results: Sequence[OptimizationResult], maximize: bool | None) -> bool:
    """``maximize`` if given, else the direction the results were run in."""
    if maximize is not None:
        return maximize
    directions = {r.maximize for r in results}
    if len(directions) > 1:
        raise ValueError(
            "maximize: the runs mix minimized and maximized ones; pass maximize."
        )
    return directions.pop() if directions else False


def best_so_far_curves(runs: Runs, maximize: bool | None = None) -> np.ndarray:
    """``r x n`` best value after each evaluation of ``r`` runs (shorter runs
    are extended with their last value; NaN before a run's first success)."""
    runs = [runs] if isinstance(runs, OptimizationResult) else list(runs)
    if not runs:
        raise ValueError("runs must hold at least one OptimizationResult.")
    maximize = _direction(runs, maximize)
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
    log_y: bool = False,
    ax: Any = None,
) -> Any:
    """Best value against evaluations: the median over runs with its
    interquartile band, one curve per method.

    Args:
        runs: One result, the results of several seeds, or ``{label: runs}``.
        maximize: Whether larger values are better (default: as the run was made).
        log_y: A logarithmic value axis (e.g. for regrets).
        ax: Axes to draw into (default: a new figure).
    """
    fig, ax = _axes(ax)
    groups = dict(runs) if isinstance(runs, Mapping) else {"treebo": runs}
    for label, group in groups.items():
        curves = best_so_far_curves(group, maximize)
        x = np.arange(1, curves.shape[1] + 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
            low, mid, high = np.nanpercentile(curves, [25, 50, 75], axis=0)
        (line,) = ax.plot(x, mid, label=f"{label} ({curves.shape[0]} runs)")
        if curves.shape[0] > 1:
            ax.fill_between(x, low, high, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best value so far")
    if log_y:
        ax.set_yscale("log")
    ax.legend()
    return fig


def path_label(space: TreeSpace, params: Mapping[str, Any]) -> str:
    """The choices that select a configuration's path, e.g. ``"model=svm"``
    (``"(root)"`` for a space without choices)."""
    names = [n for n in space.parameter_names if space.columns[n].role == "choice"]
    parts = [f"{n}={params[n]}" for n in names if n in params]
    return ", ".join(parts) if parts else "(root)"


def plot_trials(result: OptimizationResult, space: TreeSpace, ax: Any = None) -> Any:
    """Every trial's value against its index, coloured by its path; failed
    trials as crosses along the bottom.

    Args:
        result: A run.
        space: Its search space.
        ax: Axes to draw into (default: a new figure).
    """
    fig, ax = _axes(ax)
    paths = [path_label(space, t.params) for t in result.history]
    ok = [t.value is not None for t in result.history]
    values = np.array([np.nan if t.value is None else t.value for t in result.history])
    for label in dict.fromkeys(paths):
        idx = [
            i
            for i, (p, good) in enumerate(zip(paths, ok, strict=True))
            if p == label and good
        ]
        ax.scatter(idx, values[idx], s=18, label=label)
    failed = [i for i, good in enumerate(ok) if not good]
    if failed:
        bottom = np.nanmin(values) if np.isfinite(values).any() else 0.0
        ax.scatter(failed, [bottom] * len(failed), marker="x", c="red", label="failed")
    ax.set_xlabel("trial")
    ax.set_ylabel("value")
    ax.legend(fontsize="small")
    return fig


def plot_paths(
    result: OptimizationResult,
    space: TreeSpace,
    maximize: bool | None = None,
    ax: Any = None,
) -> Any:
    """How many evaluations each path received, with its best value.

    Args:
        result: A run.
        space: Its search space.
        maximize: Whether larger values are better (default: as the run was made).
        ax: Axes to draw into (default: a new figure).
    """
    fig, ax = _axes(ax)
    counts: dict[str, int] = {}
    best: dict[str, float] = {}
    better = max if _direction([result], maximize) else min
    for trial in result.history:
        label = path_label(space, trial.params)
        counts[label] = counts.get(label, 0) + 1
        if trial.value is not None:
            best[label] = better(best.get(label, trial.value), trial.value)
    labels = list(counts)
    bars = ax.barh(labels, [counts[k] for k in labels])
    ax.bar_label(
        bars,
        labels=[f"best {best[k]:.4g}" if k in best else "all failed" for k in labels],
    )
    ax.set_xlabel("evaluations")
    ax.invert_yaxis()
    return fig


def vertex_statistics(
    result: OptimizationResult, space: TreeSpace, maximize: bool | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """How many evaluations each vertex of ``space.tree`` was active in, and
    the best value among them.

    Returns:
        ``(counts, best)``, two arrays of length ``V`` (vertices in ``space.tree``'s
        breadth-first order); ``best`` is NaN where no evaluation through the vertex
        succeeded.
    """
    tree = space.tree
    if not result.history:
        return np.zeros(tree.num_vertices, dtype=int), np.full(
            tree.num_vertices, np.nan
        )
    X = space.to_tensor([t.params for t in result.history])
    active = tree.vertex_activity(X).numpy()  # n x V
    values = np.array([np.nan if t.value is None else t.value for t in result.history])
    scores = np.where(active & np.isfinite(values)[:, None], values[:, None], np.nan)
    reduce = np.fmax.reduce if _direction([result], maximize) else np.fmin.reduce
    return active.sum(0), reduce(scores, axis=0)


def _tree_layout(parents: list[int | None]) -> np.ndarray:
    """``V x 2`` positions: leaves spread along x in depth-first order, each
    parent above the middle of its children, one row per depth."""
    children: dict[int, list[int]] = {v: [] for v in range(len(parents))}
    for v, parent in enumerate(parents):
        if parent is not None:
            children[parent].append(v)
    xy = np.zeros((len(parents), 2))
    next_leaf = [0.0]

    def place(v: int, depth: int) -> float:
        if children[v]:
            x = float(np.mean([place(c, depth + 1) for c in children[v]]))
        else:
            x, next_leaf[0] = next_leaf[0], next_leaf[0] + 1.0
        xy[v] = x, -depth
        return x

    place(0, 0)
    return xy


def plot_tree(
    result: OptimizationResult,
    space: TreeSpace,
    maximize: bool | None = None,
    ax: Any = None,
) -> Any:
    """The search space as a tree: each vertex with the condition that
    activates it, its parameters, its share of the evaluations and the best value among
    them (shaded by share).

    Args:
        result: A run.
        space: Its search space.
        maximize: Whether larger values are better (default: as the run was made).
        ax: Axes to draw into (default: a new figure).
    """
    tree = space.tree
    counts, best = vertex_statistics(result, space, maximize)
    total = max(len(result.history), 1)
    xy = _tree_layout([v.parent for v in tree.vertices])
    width = xy[:, 0].max() + 1.0
    height = -xy[:, 1].min() + 1.0
    if ax is None:
        fig, ax = _pyplot().subplots(
            figsize=(min(2.2 * width + 1.0, 20.0), 1.6 * height + 0.6)
        )
    else:
        fig = ax.figure
    names = space.parameter_names
    labels = {
        name: {code: label for label, code in codes.items()}
        for name, codes in space.choice_codes.items()
    }
    colours = _pyplot().get_cmap("Blues")
    for vertex in tree.vertices:
        x, y = xy[vertex.index]
        if vertex.parent is not None:
            px, py = xy[vertex.parent]
            ax.plot([px, x], [py, y], color="0.6", lw=1.0, zorder=1)
        if vertex.condition is None:
            head = "(root)"
        else:
            col, codes = vertex.condition
            head = f"{names[col]}=" + "|".join(
                str(labels[names[col]].get(code, code)) for code in codes
            )
        params = [names[c] for c in vertex.continuous_columns]
        shown = ", ".join(params[:3]) + (", ..." if len(params) > 3 else "")
        share = counts[vertex.index] / total
        score = best[vertex.index]
        text = "\n".join(
            part
            for part in (
                head,
                shown,
                f"{counts[vertex.index]} evals ({share:.0%})",
                f"best {score:.4g}" if np.isfinite(score) else "",
            )
            if part
        )
        ax.text(
            x,
            y,
            text,
            ha="center",
            va="center",
            fontsize="x-small",
            color="white" if share > 0.6 else "black",
            zorder=2,
            bbox={
                "boxstyle": "round",
                "facecolor": colours(0.1 + 0.7 * share),
                "edgecolor": "0.4",
            },
        )
    ax.set_xlim(-0.7, width - 0.3)
    ax.set_ylim(-height + 0.5, 0.6)
    ax.set_axis_off()
    return fig


def plot_timing(result: OptimizationResult, ax: Any = None) -> Any:
    """Seconds spent proposing and evaluating each trial.

    Args:
        result: A run.
        ax: Axes to draw into (default: a new figure).
    """
    fig, ax = _axes(ax)
    x = np.arange(len(result.history))
    ax.plot(x, [t.proposal_seconds for t in result.history], label="proposal")
    ax.plot(x, [t.eval_seconds for t in result.history], label="evaluation")
    ax.set_xlabel("trial")
    ax.set_ylabel("seconds")
    ax.legend()
    return fig
