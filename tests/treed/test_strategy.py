import pytest
import torch

from tests.treed import UnprunedTreedGP
from treebo import (
    Choice,
    ConfigurationError,
    Integer,
    Real,
    TreeOptimizer,
    TreeSpace,
    Vertex,
    minimize,
)
from treebo.treed import TreedOptions, TreedStrategy


def _space():
    return TreeSpace(
        Vertex([Real("x", 0.0, 1.0), Real("y", 1e-3, 1.0, log_scale=True)])
    )


def _objective(p):
    return (p["x"] - 0.3) ** 2 + (torch.log10(torch.tensor(p["y"])) + 1.0).item() ** 2


def test_treed_loop_proposes_model_based_points_that_improve():
    result = minimize(
        _objective,
        _space(),
        budget=12,
        seed=0,
        strategy=TreedStrategy(TreedOptions(num_points=1024)),
    )
    kinds = [t.kind for t in result.history]
    assert kinds.count("bo") == 12 - kinds.count("initial")
    initial = min(t.value for t in result.history if t.kind == "initial")
    assert result.best_value < initial


def test_with_one_leaf_the_loop_converges_on_a_smooth_function():
    # max_depth=0: a single GP, fitted and maximized by the same machinery.
    result = minimize(
        _objective,
        _space(),
        budget=18,
        seed=0,
        strategy=TreedStrategy(TreedOptions(num_points=2048, max_depth=0)),
    )
    assert result.best_value < 1e-3
    assert result.best_params["x"] == pytest.approx(0.3, abs=0.02)


def test_a_resumed_treed_run_continues_exactly(tmp_path):
    path = tmp_path / "run.jsonl"
    opts = TreedOptions(num_points=1024)
    full = minimize(
        _objective, _space(), budget=12, seed=2, strategy=TreedStrategy(opts)
    )
    minimize(
        _objective,
        _space(),
        budget=9,
        seed=2,
        strategy=TreedStrategy(opts),
        checkpoint=path,
    )
    resumed = minimize(
        _objective,
        _space(),
        budget=12,
        seed=2,
        strategy=TreedStrategy(opts),
        checkpoint=path,
    )
    assert [t.params for t in resumed.history] == [t.params for t in full.history]


def test_pending_configurations_are_avoided():
    opt = TreeOptimizer(
        _space(),
        seed=1,
        n_initial=8,
        strategy=TreedStrategy(TreedOptions(num_points=1024)),
    )
    for _ in range(8):
        p = opt.ask()
        opt.tell(p, _objective(p))
    first, second = opt.ask(), opt.ask()  # the second with the first pending
    assert far_apart(opt.space, first, second)  # not a round-off apart


@pytest.mark.parametrize(
    "param", [Integer("n", 1, 5), Choice("c", {"a": Vertex(), "b": Vertex()})]
)
def test_spaces_beyond_real_parameters_are_refused_by_name(param):
    if isinstance(param, Choice):
        space = TreeSpace(Vertex([Real("x", 0.0, 1.0)], [param]))
    else:
        space = TreeSpace(Vertex([Real("x", 0.0, 1.0), param]))
    with pytest.raises(ConfigurationError, match=f"'{param.name}'"):
        TreeOptimizer(space, strategy="treed")


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"min_leaf_size": 0}, "min_leaf_size"),
        ({"warp": 1}, "warp"),
        ({"prune": "yes"}, "prune"),
        ({"num_points": 0}, "num_points"),
        ({"noise_floor": -1.0}, "noise_floor"),
    ],
)
def test_options_are_checked_and_name_the_parameter(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name):
        TreedOptions(**kwargs)


class _UnprunedStrategy(TreedStrategy):
    """Paper 003's tree, as a benchmark would build it: no pruning."""

    def build_model(self, observations):
        opts = self.options
        return UnprunedTreedGP(
            observations.X,
            observations.y,
            min_leaf_size=opts.min_leaf_size,
            bounds=observations.space.bounds.to(observations.X),
            noise_floor=opts.noise_floor,
        )


@pytest.mark.parametrize("prune", [True, False])
def test_the_strategy_builds_the_pruned_or_the_paper_tree(prune):
    from treebo.treed import build_partition, loo_prune

    options = TreedOptions(num_points=256)
    strategy = TreedStrategy(options) if prune else _UnprunedStrategy(options)
    opt = TreeOptimizer(_space(), seed=0, n_initial=30, strategy=strategy)
    for x in opt.space.sample(30, seed=1):
        params = opt.space.to_dict(x)
        opt.tell(params, _objective(params))
    opt.ask()
    model = opt.strategy.last_model
    X, y = model.train_inputs[0], model.train_targets
    grown = build_partition(X, y)
    expected = loo_prune(grown, X, y) if prune else grown
    assert torch.equal(model.partition.members, expected.members)
    assert grown.num_leaves > 1


def far_apart(space, a, b, tol=1e-3):
    """Whether two configurations differ by more than ``tol`` of some range."""
    X = space.to_tensor([a, b])
    width = space.bounds[1] - space.bounds[0]
    return bool(((X[0] - X[1]).abs() / width).max() > tol)
