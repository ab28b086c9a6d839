"""The ``"bktf"`` strategy in the loop: proposals on the grid, never repeated,
exact resume, pools, refusals."""

from __future__ import annotations

import pytest
import torch

from treebo import TreeOptimizer, minimize
from treebo.bktf import BKTFOptions, BKTFStrategy, Grid, SampleEI
from treebo.bktf.strategy import auto_resolution
from treebo.space import (
    Categorical,
    Choice,
    ConfigurationError,
    Integer,
    Real,
    TreeSpace,
    Vertex,
)

FAST = BKTFOptions(resolution=6, num_sweeps=20, burn_in=10)


def space() -> TreeSpace:
    return TreeSpace(
        Vertex(
            [
                Real("x", -1.0, 1.0),
                Integer("k", 1, 3),
                Categorical("c", ["a", "b"]),
            ]
        )
    )


def objective(p):
    return (p["x"] - 0.4) ** 2 + 0.1 * p["k"] + (0.5 if p["c"] == "a" else 0.0)


def test_every_evaluation_is_a_distinct_grid_point():
    s = space()
    result = minimize(
        objective, s, budget=12, seed=0, strategy=BKTFStrategy(FAST), n_initial=3
    )
    grid = Grid.from_space(s, 6)
    X = s.to_tensor([t.params for t in result.history])
    flat = grid.flat(grid.indices(X))  # raises if any point is off the grid
    assert len(set(flat.tolist())) == 12
    assert [t.kind for t in result.history].count("bo") == 9


def test_a_resumed_run_continues_exactly(tmp_path):
    s, path = space(), tmp_path / "run.json"

    def run(budget, **kwargs):  # a fresh strategy per run: one serves one optimizer
        strategy = BKTFStrategy(FAST)
        return minimize(
            objective, s, budget, seed=1, strategy=strategy, n_initial=3, **kwargs
        )

    full = run(8)
    run(5, checkpoint=path)
    resumed = run(8, checkpoint=path)
    assert [t.params for t in resumed.history] == [t.params for t in full.history]


def test_the_initial_design_repeats_no_grid_point():
    coarse = TreeSpace(Vertex([Real("a", 0, 1), Real("b", 0, 1)]))
    opt = TreeOptimizer(
        coarse, strategy=BKTFStrategy(BKTFOptions(resolution=2)), seed=0, n_initial=4
    )
    X = coarse.to_tensor(opt._initial_design)
    assert len({tuple(row.tolist()) for row in X}) == 4
    assert set(X.flatten().tolist()) <= {0.0, 1.0}


def test_pending_points_are_not_proposed_again():
    s = space()
    opt = TreeOptimizer(s, strategy=BKTFStrategy(FAST), seed=0, n_initial=3)
    for _ in range(3):
        params = opt.ask()
        opt.tell(params, objective(params))
    asked = [opt.ask() for _ in range(4)]
    encoded = {tuple(row.tolist()) for row in s.to_tensor(asked)}
    assert len(encoded) == 4


def test_pool_proposals_come_from_the_pool():
    s = space()
    opt = TreeOptimizer(
        s,
        strategy=BKTFStrategy(
            BKTFOptions(resolution=6, num_sweeps=20, burn_in=10, acquisition=SampleEI())
        ),
        seed=0,
        n_initial=3,
    )
    for _ in range(3):
        params = opt.ask()
        opt.tell(params, objective(params))
    pool = [{"x": 0.2, "k": 2, "c": "b"}, {"x": -0.6, "k": 1, "c": "a"}]
    assert opt.ask(candidates=pool) in pool


def test_refusals_name_the_parameter():
    conditional = TreeSpace(
        Vertex(choices=[Choice("family", {"a": Vertex([Real("x", 0, 1)])})])
    )
    with pytest.raises(ConfigurationError, match="'family' is a choice"):
        TreeOptimizer(conditional, strategy="bktf")
    with pytest.raises(ValueError, match="burn_in"):
        BKTFOptions(num_sweeps=10, burn_in=10)
    with pytest.raises(ValueError, match="resolution"):
        BKTFOptions(resolution=1)
    with pytest.raises(TypeError, match="acquisition"):
        BKTFOptions(acquisition="ucb")


def test_automatic_resolution_bounds_the_grid():
    wide = TreeSpace(Vertex([Real(f"x{i}", 0, 1) for i in range(6)]))
    r = auto_resolution(wide, max_points=10**6)
    assert r**6 <= 10**6 < (r + 1) ** 6
    assert auto_resolution(space()) == 50
    assert torch.equal(
        Grid.from_space(wide, r).values[0], torch.linspace(0, 1, r, dtype=torch.float64)
    )
