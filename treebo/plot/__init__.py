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

from treebo.plot.base import path_label
from treebo.plot.model import plot_contour, plot_importances
from treebo.plot.runs import (
    best_so_far_curves,
    plot_best_so_far,
    plot_paths,
    plot_slice,
    plot_timing,
    plot_trials,
)
from treebo.plot.tree import plot_tree, vertex_label, vertex_statistics

__all__ = [
    "best_so_far_curves",
    "path_label",
    "plot_best_so_far",
    "plot_contour",
    "plot_importances",
    "plot_paths",
    "plot_slice",
    "plot_timing",
    "plot_tree",
    "plot_trials",
    "vertex_label",
    "vertex_statistics",
]
