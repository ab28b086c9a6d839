import pytest

from treebo import (
    Categorical,
    ConfigurationError,
    Real,
    TreeOptimizer,
    TreeSpace,
    Vertex,
    minimize,
)
from treebo.tree_additive import TreeAdditiveOptions, TreeAdditiveStrategy


def _space(d=4):
    return TreeSpace(Vertex([Real(f"x{i}", -1.0, 1.0) for i in range(d)]))


def _objective(p):
    # x0 and x1 interact; x2, x3 are separable.
    x = [p[f"x{i}"] for i in range(4)]
    return (x[0] - x[1]) ** 2 + (x[0] + 0.5) ** 2 + (x[2] - 0.2) ** 2 + abs(x[3])


class _RefitEveryStep(TreeAdditiveStrategy):
    def refit_due(self, step):
        return True


def test_the_loop_improves_on_its_initial_design_and_learns_a_forest():
    opts = TreeAdditiveOptions(learn_interval=5, structure_samples=100)
    opt = TreeOptimizer(_space(), seed=0, strategy=_RefitEveryStep(opts))
    for _ in range(25):
        p = opt.ask()
        opt.tell(p, _objective(p))
    result = opt.result()
    initial = min(t.value for t in result.history if t.kind == "initial")
    assert result.best_value < 0.5 * initial
    edges = opt.strategy.edges
    assert edges is not None and edges.shape[-1] == 2
    assert [0, 1] in edges.tolist()  # the interacting pair, learned
    assert set(opt.last_timings) == {"fit", "structure", "optimize"}


def test_a_resumed_run_continues_exactly(tmp_path):
    path = tmp_path / "run.jsonl"
    opts = TreeAdditiveOptions(learn_interval=3, structure_samples=64)

    def run(budget, **kwargs):
        strategy = TreeAdditiveStrategy(opts)
        return minimize(
            _objective, _space(), budget, seed=3, strategy=strategy, **kwargs
        )

    full = run(14)
    run(9, checkpoint=path)
    resumed = run(14, checkpoint=path)
    assert [t.params for t in resumed.history] == [t.params for t in full.history]


def test_pending_configurations_are_avoided():
    opt = TreeOptimizer(_space(), strategy="tree_additive", seed=1, n_initial=6)
    for _ in range(6):
        p = opt.ask()
        opt.tell(p, _objective(p))
    first, second = opt.ask(), opt.ask()
    assert far_apart(opt.space, first, second)  # not a round-off apart


def test_a_fixed_structure_is_kept():
    opts = TreeAdditiveOptions(edges=((0, 1),))
    opt = TreeOptimizer(_space(), seed=0, strategy=TreeAdditiveStrategy(opts))
    for _ in range(8):
        p = opt.ask()
        opt.tell(p, _objective(p))
    assert opt.strategy.edges.tolist() == [[0, 1]]


def test_spaces_and_structures_are_checked_by_name():
    space = TreeSpace(Vertex([Real("x", 0.0, 1.0), Categorical("c", ["a", "b"])]))
    with pytest.raises(ConfigurationError, match="'c'"):
        TreeOptimizer(space, strategy="tree_additive")
    opts = TreeAdditiveOptions(edges=((0, 1), (1, 2), (2, 0)))
    with pytest.raises(ValueError, match="cycle"):
        TreeOptimizer(_space(), strategy=TreeAdditiveStrategy(opts))


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"learn_interval": 0}, "learn_interval"),
        ({"edge_prior": 1.0}, "edge_prior"),
        ({"grid_size": 1}, "grid_size"),
        ({"edges": ((0, 1, 2),)}, "edges"),
    ],
)
def test_options_are_checked_by_name(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name):
        TreeAdditiveOptions(**kwargs)


def far_apart(space, a, b, tol=1e-3):
    """Whether two configurations differ by more than ``tol`` of some range."""
    X = space.to_tensor([a, b])
    width = space.bounds[1] - space.bounds[0]
    return bool(((X[0] - X[1]).abs() / width).max() > tol)
