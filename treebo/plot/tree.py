"""The search space as a tree, each vertex with its share of the evaluations and
its best value."""

from __future__ import annotations

from typing import Any

import numpy as np

from treebo.loop.history import OptimizationResult
from treebo.plot.base import pyplot, run_direction
from treebo.space import TreeSpace

#: Trees with more leaves than this are drawn sideways (depth along x).
WIDE_TREE_LEAVES = 8


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
    reduce = np.fmax.reduce if run_direction([result], maximize) else np.fmin.reduce
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
    them (shaded by share). A tree of more than ``WIDE_TREE_LEAVES`` leaves is drawn
    from left to right, one row per leaf, so that its boxes never overlap (the figure
    grows with the tree).

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
    sideways = xy[:, 0].max() + 1.0 > WIDE_TREE_LEAVES
    if sideways:  # depth along x, leaves down the page
        xy = np.stack([-xy[:, 1], -xy[:, 0]], axis=-1)
    width = xy[:, 0].max() + 1.0
    height = -xy[:, 1].min() + 1.0
    if ax is None:
        size = (
            (3.0 * width + 0.6, 0.62 * height + 0.6)
            if sideways
            else (
                2.2 * width + 1.0,
                1.6 * height + 0.6,
            )
        )
        fig, ax = pyplot().subplots(figsize=size)
    else:
        fig = ax.figure
    names = space.parameter_names
    labels = {
        name: {code: label for label, code in codes.items()}
        for name, codes in space.choice_codes.items()
    }
    colours = pyplot().get_cmap("Blues")
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
        parts = (
            head,
            shown,
            f"{counts[vertex.index]} evals ({share:.0%})",
            f"best {score:.4g}" if np.isfinite(score) else "",
        )
        if sideways:  # two lines a box: the rows are close
            parts = (
                ": ".join(p for p in parts[:2] if p),
                ", ".join(p for p in parts[2:] if p),
            )
        text = "\n".join(part for part in parts if part)
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
    if sideways:
        ax.set_xlim(-0.5, width - 0.5)
        ax.set_ylim(-height + 0.4, 0.6)
    else:
        ax.set_xlim(-0.7, width - 0.3)
        ax.set_ylim(-height + 0.5, 0.6)
    ax.set_axis_off()
    return fig


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
