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
    fig, ax = _pyplot().subplots(figsize=(6.4, 4.0), layout="constrained")
    return fig, ax


def _say_empty(ax: Any, why: str) -> None:
    """Write why a plot has nothing to draw in the middle of its axes."""
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes)


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
    fig, ax = _axes(ax)
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
        _say_empty(ax, "no successful evaluations")
        return fig
    values = np.concatenate(drawn)
    if log_y is None:
        log_y = bool(values.min() > 0 and values.max() > 100 * values.min())
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
    trials as red crosses in a strip along the bottom of the axes (they have no
    value).

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
        if idx:
            ax.scatter(idx, values[idx], s=18, label=label)
    failed = [i for i, good in enumerate(ok) if not good]
    if failed:
        # A shaded strip below the values, kept clear of them: failures have none.
        low, high = ax.get_ylim()
        ax.set_ylim(low - 0.15 * (high - low), high)
        strip = ax.get_xaxis_transform()  # x in data, y in axes units
        ax.add_patch(
            _pyplot().Rectangle(
                (0.0, 0.0), 1.0, 0.1, transform=ax.transAxes, color="0.92", zorder=0
            )
        )
        ax.scatter(failed, [0.05] * len(failed), marker="x", c="red", label="failed",
                   transform=strip)  # fmt: skip
    ax.set_xlabel("trial")
    ax.set_ylabel("value")
    if not any(ok):
        _say_empty(ax, "no successful evaluations")
    if result.history:
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
    fig, axes = _pyplot().subplots(
        rows, columns, figsize=(3.2 * columns, 2.8 * rows), squeeze=False,
        sharey=True, layout="constrained",
    )  # fmt: skip
    trials = [t for t in result.history if t.value is not None]
    paths = [path_label(space, t.params) for t in trials]
    colours = {label: f"C{i % 10}" for i, label in enumerate(dict.fromkeys(paths))}
    for ax, name in zip(axes.flat, names, strict=False):
        param = space.columns[name].param
        on = [(t, p) for t, p in zip(trials, paths, strict=True) if name in t.params]
        for label in dict.fromkeys(p for _, p in on):
            mine = [t for t, p in on if p == label]
            ax.scatter([t.params[name] for t in mine], [t.value for t in mine], s=14,
                       color=colours[label], label=label)  # fmt: skip
        if getattr(param, "log_scale", False):
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
        if hasattr(param, "lower"):
            ax.set_xlim(float(param.lower), float(param.upper))
        ax.set_xlabel(name)
        if not on:
            _say_empty(ax, "never active")
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


def vertex_label(space: TreeSpace, v: int) -> str:
    """A vertex as its parameters and the choice that activates it, e.g.
    ``"gamma, degree (kernel=poly)"``."""
    vertex = space.tree.vertices[v]
    owned = vertex.continuous_columns + vertex.choice_columns
    names = ", ".join(space.parameter_names[c] for c in sorted(owned)) or "-"
    if vertex.condition is None:
        return f"{names} (root)"
    column, values = vertex.condition
    name = space.parameter_names[column]
    labels = {code: label for label, code in space.choice_codes[name].items()}
    return f"{names} ({name}={'|'.join(str(labels[v]) for v in values)})"


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
    fig, ax = _axes(ax)
    ax.barh([vertex_label(space, int(v)) for v in order], shares[order])
    ax.invert_yaxis()
    ax.set_xlabel("share of the posterior mean's variance")
    if not len(order):
        _say_empty(ax, "the model's mean is constant over the trials")
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
        low, high = float(param.lower), float(param.upper)
        log = getattr(param, "log_scale", False)
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
    fig, ax = _axes(ax)
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
    ax.legend(fontsize="small")
    return fig
