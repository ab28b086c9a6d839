"""What every plot shares: matplotlib on demand, axes, the run's direction and
path labels."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from treebo.loop.history import OptimizationResult
from treebo.space import TreeSpace

Runs = OptimizationResult | Sequence[OptimizationResult]

#: Paths drawn in colour and named in legends; the rest share one grey entry.
MAX_PATHS_SHOWN = 8
#: The grey of the paths beyond ``MAX_PATHS_SHOWN``.
OTHER_COLOUR = "0.7"


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


def path_colours(labels: Sequence[str]) -> dict[str, str]:
    """A colour for each path label: the ``MAX_PATHS_SHOWN`` most frequent in
    ``labels`` get their own (most frequent first, ties in order of appearance), every
    other path ``OTHER_COLOUR`` (grey).

    Example:
        >>> path_colours(["a", "b", "b"])
        {'b': 'C0', 'a': 'C1'}
    """
    counts = Counter(labels)
    order = sorted(counts, key=lambda k: -counts[k])  # stable: first seen first
    return {k: f"C{i % 10}" if i < MAX_PATHS_SHOWN else OTHER_COLOUR
            for i, k in enumerate(order)}  # fmt: skip


def path_legend_label(label: str, colours: Mapping[str, str]) -> str:
    """``label``, or for a grey path the shared entry ``"K other paths"``."""
    if colours.get(label) != OTHER_COLOUR:
        return label
    hidden = sum(c == OTHER_COLOUR for c in colours.values())
    return f"{hidden} other path" + ("s" if hidden > 1 else "")


def legend_outside(ax: Any, **kwargs: Any) -> Any:
    """A legend to the right of ``ax``, outside it (it never covers the data), one
    entry per label."""
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    if not unique:
        return None
    return ax.legend(unique.values(), unique.keys(), loc="upper left",
                     bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                     fontsize="small", **kwargs)  # fmt: skip


def value_range(param: Any) -> tuple[float, float]:
    """A real or integer parameter's ``(low, high)``."""
    if hasattr(param, "lower"):
        return float(param.lower), float(param.upper)
    return float(param.low), float(param.high)
