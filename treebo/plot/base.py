"""What every plot shares: matplotlib on demand, axes, the run's direction and
path labels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from treebo.loop.history import OptimizationResult
from treebo.space import TreeSpace

Runs = OptimizationResult | Sequence[OptimizationResult]


def pyplot() -> Any:
    """``matplotlib.pyplot``, with an error that says how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - exercised without matplotlib
        raise ImportError(
            "treebo.plot needs matplotlib: pip install 'treebo[plot]'."
        ) from err
    return plt


def figure_axes(ax: Any) -> tuple[Any, Any]:
    """``(figure, axes)``: those of ``ax``, or a new figure's."""
    if ax is not None:
        return ax.figure, ax
    fig, ax = pyplot().subplots(figsize=(6.4, 4.0), layout="constrained")
    return fig, ax


def say_empty(ax: Any, why: str) -> None:
    """Write why a plot has nothing to draw in the middle of its axes."""
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes)


def run_direction(results: Sequence[OptimizationResult], maximize: bool | None) -> bool:
    """``maximize`` if given, else the direction the results were run in."""
    if maximize is not None:
        return maximize
    directions = {r.maximize for r in results}
    if len(directions) > 1:
        raise ValueError(
            "maximize: the runs mix minimized and maximized ones; pass maximize."
        )
    return directions.pop() if directions else False


def path_label(space: TreeSpace, params: Mapping[str, Any]) -> str:
    """The choices that select a configuration's path, e.g. ``"model=svm"``
    (``"(root)"`` for a space without choices)."""
    names = [n for n in space.parameter_names if space.columns[n].role == "choice"]
    parts = [f"{n}={params[n]}" for n in names if n in params]
    return ", ".join(parts) if parts else "(root)"
