"""Plots of runs: what each figure draws matches the results it is given."""

from __future__ import annotations

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from treebo import minimize  # noqa: E402
from treebo.loop.history import OptimizationResult, Trial  # noqa: E402
from treebo.plot import (  # noqa: E402
    best_so_far_curves,
    path_label,
    plot_best_so_far,
    plot_contour,
    plot_importances,
    plot_paths,
    plot_slice,
    plot_timing,
    plot_tree,
    plot_trials,
    vertex_statistics,
)
from treebo.test_functions import Jenatton  # noqa: E402

SPACE = Jenatton().space
LEFT = {"x1": 0, "r8": 0.5, "x2": 0, "x4": 0.1}
RIGHT = {"x1": 1, "r9": 0.5, "x3": 1, "x7": 0.2}


def run(values, params=None, seconds=None):
    params = params or [LEFT] * len(values)
    trials = [
        Trial(i, p, v, "ok" if v is not None else "failed",
              eval_seconds=(seconds or [0.0] * len(values))[i])
        for i, (p, v) in enumerate(zip(params, values, strict=True))
    ]  # fmt: skip
    ok = [t for t in trials if t.value is not None]
    best = min(ok, key=lambda t: t.value) if ok else None
    return OptimizationResult(best and best.params, best and best.value, trials)


def test_best_so_far_curves_pad_short_runs_with_their_last_value():
    curves = best_so_far_curves([run([3.0, 1.0, 2.0]), run([None, 5.0])])
    np.testing.assert_array_equal(curves[0], [3.0, 1.0, 1.0])
    np.testing.assert_array_equal(curves[1], [np.nan, 5.0, 5.0])
    with pytest.raises(ValueError, match="at least one"):
        best_so_far_curves([])


def test_the_best_value_curve_is_the_median_with_the_quartile_band():
    runs = [run([4.0, 1.0]), run([2.0, 2.0]), run([6.0, 3.0])]
    fig = plot_best_so_far({"treebo": runs, "one": runs[0]})
    ax = fig.axes[0]
    lines = ax.get_lines()
    np.testing.assert_array_equal(lines[0].get_ydata(), [4.0, 2.0])  # medians
    np.testing.assert_array_equal(lines[1].get_ydata(), [4.0, 1.0])
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(1.5) and band.max() == pytest.approx(5.0)
    assert len(ax.collections) == 1  # no band for a single run
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "treebo (3 runs)",
        "one (1 run)",
    ]


def test_trials_are_coloured_by_path_and_failures_marked():
    result = run([1.0, 2.0, None, 0.5], [LEFT, RIGHT, LEFT, LEFT])
    ax = plot_trials(result, SPACE).axes[0]
    offsets = {c.get_label(): c.get_offsets() for c in ax.collections}
    left, right = path_label(SPACE, LEFT), path_label(SPACE, RIGHT)
    assert left == "x1=0, x2=0" and right == "x1=1, x3=1"
    np.testing.assert_array_equal(offsets[left], [[0, 1.0], [3, 0.5]])
    np.testing.assert_array_equal(offsets[right], [[1, 2.0]])
    np.testing.assert_array_equal(offsets["failed"], [[2, 0.05]])  # a strip apart
    assert ax.get_ylim()[0] < 0.5 - 0.1  # the strip lies below every value


def test_paths_count_evaluations_and_show_their_best():
    result = run([1.0, 2.0, None, 0.5], [LEFT, RIGHT, LEFT, LEFT])
    ax = plot_paths(result, SPACE).axes[0]
    widths = [p.get_width() for p in ax.patches]
    assert widths == [3, 1]
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["best 0.5", "best 2"]
    ax = plot_paths(result, SPACE, maximize=True).axes[0]
    assert [t.get_text() for t in ax.texts] == ["best 1", "best 2"]


def test_timing_draws_proposal_and_evaluation_seconds():
    result = run([1.0, 2.0], seconds=[0.5, 1.5])
    lines = plot_timing(result).axes[0].get_lines()
    np.testing.assert_array_equal(lines[1].get_ydata(), [0.5, 1.5])
    assert [ln.get_label() for ln in lines] == ["proposal", "evaluation"]


def test_vertex_statistics_count_the_evaluations_through_each_vertex():
    # Vertices of Jenatton's tree, breadth first: root, x1=0, x1=1, x2=0,
    # x2=1, x3=0, x3=1.
    result = run([1.0, 2.0, None, 0.5], [LEFT, RIGHT, LEFT, LEFT])
    counts, best = vertex_statistics(result, SPACE)
    np.testing.assert_array_equal(counts, [4, 3, 1, 3, 0, 0, 1])
    np.testing.assert_array_equal(best, [0.5, 0.5, 2.0, 0.5, np.nan, np.nan, 2.0])
    _, best = vertex_statistics(result, SPACE, maximize=True)
    np.testing.assert_array_equal(best, [2.0, 1.0, 2.0, 1.0, np.nan, np.nan, 2.0])


def test_the_tree_shows_each_vertex_with_its_share_and_best():
    result = run([1.0, 2.0, None, 0.5], [LEFT, RIGHT, LEFT, LEFT])
    ax = plot_tree(result, SPACE).axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == SPACE.tree.num_vertices
    assert texts[0] == "(root)\n4 evals (100%)\nbest 0.5"
    assert texts[1] == "x1=0\nr8\n3 evals (75%)\nbest 0.5"
    assert texts[4] == "x2=1\nx5\n0 evals (0%)"
    assert len(ax.get_lines()) == SPACE.tree.num_vertices - 1  # one per edge


def test_a_maximized_run_is_drawn_in_its_own_direction():
    result = run([1.0, 3.0, 2.0])
    result.maximize = True
    np.testing.assert_array_equal(best_so_far_curves(result)[0], [1.0, 3.0, 3.0])
    np.testing.assert_array_equal(
        best_so_far_curves(result, maximize=False)[0], [1.0, 1.0, 1.0]
    )
    ax = plot_paths(result, SPACE).axes[0]
    assert [t.get_text() for t in ax.texts] == ["best 3"]
    with pytest.raises(ValueError, match="maximize"):
        best_so_far_curves([result, run([1.0])])


def test_best_so_far_is_a_step_curve_with_a_log_axis_for_regrets_and_says_when_empty():
    ax = plot_best_so_far(run([1e-1, 1e-4, 1e-6])).axes[0]
    assert ax.get_yscale() == "log"  # positive, six decades
    assert ax.get_legend().get_texts()[0].get_text() == "treebo (1 run)"
    assert plot_best_so_far(run([3.0, 1.0])).axes[0].get_yscale() == "linear"
    empty = plot_best_so_far(run([None, None])).axes[0]
    assert [t.get_text() for t in empty.texts] == ["no successful evaluations"]


def test_slice_importances_and_contour_draw_what_the_run_saw():
    problem = Jenatton()
    result = minimize(problem.objective, problem.space, budget=10, seed=0)
    fig = plot_slice(result, problem.space, params=["x1", "x4", "r8"])
    first = fig.axes[0]
    points = np.concatenate([c.get_offsets() for c in first.collections])
    assert len(points) == 10  # x1 is on every path
    with pytest.raises(ValueError, match="'nope'"):
        plot_slice(result, problem.space, params=["nope"])
    ax = plot_importances(result, problem.space).axes[0]
    widths = [p.get_width() for p in ax.patches]
    assert widths == sorted(widths, reverse=True) and sum(widths) == pytest.approx(1)
    best = result.best_params
    shared = "r8" if "r8" in best else "r9"
    leaf = next(n for n in ("x4", "x5", "x6", "x7") if n in best)
    fig = plot_contour(result, problem.space, shared, leaf, resolution=8)
    assert fig.axes[0].get_xlabel() == shared
    other = next(n for n in ("x4", "x5", "x6", "x7") if n not in best)
    with pytest.raises(ValueError, match="not active in the recommended"):
        plot_contour(result, problem.space, shared, other)


def wide_run(n=80):
    """A run over the 36-path model-selection space (27 parameters, integers and
    categoricals among them), its values made up."""
    from treebo.test_functions.model_selection import model_selection_space

    space = model_selection_space()
    configs = space.to_dicts(space.sample(n, seed=0))
    rng = np.random.default_rng(0)
    trials = [Trial(i, c, float(rng.random())) for i, c in enumerate(configs)]
    best = min(trials, key=lambda t: t.value)
    return space, OptimizationResult(best.params, best.value, trials)


def boxes_overlap(a, b) -> bool:
    return not (a.x1 <= b.x0 or b.x1 <= a.x0 or a.y1 <= b.y0 or b.y1 <= a.y0)


def test_every_plot_reads_at_tens_of_paths_and_with_integers():
    space, result = wide_run()
    assert space.num_paths >= 27
    fig = plot_trials(result, space)
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert len(labels) <= 9 and labels[-1].endswith("other paths")  # top 8 + rest
    renderer = fig.canvas.get_renderer()
    outside = legend.get_window_extent(renderer)
    assert outside.x0 >= ax.get_window_extent(renderer).x1  # never over the data
    ax = plot_paths(result, space).axes[0]
    assert len(ax.patches) <= 9
    assert sum(p.get_width() for p in ax.patches) == len(result.history)
    fig = plot_tree(result, space)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_bbox_patch().get_window_extent(renderer) for t in fig.axes[0].texts]
    assert len(boxes) == space.tree.num_vertices
    whole = fig.bbox
    for i, a in enumerate(boxes):  # inside the figure, none over another
        assert a.x0 >= whole.x0 and a.x1 <= whole.x1
        assert a.y0 >= whole.y0 and a.y1 <= whole.y1
        assert not any(boxes_overlap(a, b) for b in boxes[i + 1 :])
    fig = plot_slice(result, space)  # integers and categoricals too
    assert len([ax for ax in fig.axes if ax.axison]) == len(space.parameter_names)
    best = result.best_params
    numeric = [n for n in best if space.columns[n].role in ("real", "integer")]
    integer = next(n for n in numeric if space.columns[n].role == "integer")
    other = next(n for n in numeric if n != integer)
    fig = plot_contour(result, space, integer, other, resolution=6)
    assert fig.axes[0].get_xlabel() == integer
    plot_importances(result, space)
    plot_timing(result)
    plot_best_so_far({"run": result})
