"""The Strategy seam: the registry, make_strategy, the deprecated model=, and shared
checks."""

import dataclasses

import pytest
import torch

from treebo import (
    Categorical,
    ConfigurationError,
    Real,
    TreeOptimizer,
    TreeSpace,
    Vertex,
    minimize,
)
from treebo.add_tree import (
    AddTreeOptions,
    AddTreeStrategy,
    AddTreeUCBOptions,
    LocalStepOptions,
)
from treebo.strategies import (
    STRATEGIES,
    Strategy,
    load_strategies,
    make_strategy,
    register_strategy,
)
from treebo.strategies.base import (
    REPEAT_TOL,
    is_observed,
    require_real_parameters,
    strategy_from_model,
)
from treebo.treed import TreedOptions


def test_make_strategy_takes_a_name_or_a_strategy():
    built_in = {"add_tree", "add_tree_ucb", "tree_additive", "treed", "bktf"}
    assert built_in <= set(load_strategies())  # the families load on first lookup
    assert type(make_strategy("add_tree")) is AddTreeStrategy
    strategy = AddTreeStrategy()
    assert make_strategy(strategy) is strategy
    with pytest.raises(ValueError, match="strategy must be one of"):
        make_strategy("gp")
    with pytest.raises(TypeError, match="got dict"):
        make_strategy({"noise_floor": 1e-4})
    with pytest.raises(TypeError, match="options go to the strategy's constructor"):
        make_strategy(AddTreeOptions())


def test_the_deprecated_model_argument_still_takes_names_options_and_strategies():
    options = AddTreeOptions(local=None)
    assert strategy_from_model(options).options is options
    assert strategy_from_model(AddTreeUCBOptions()).name == "add_tree_ucb"
    assert strategy_from_model(TreedOptions(warp=True)).options.warp
    assert strategy_from_model("treed").name == "treed"
    with pytest.raises(TypeError, match="got LocalStepOptions"):
        strategy_from_model(LocalStepOptions())  # no strategy's options
    space = TreeSpace(Vertex([Real("x", 0.0, 1.0)]))
    with pytest.warns(FutureWarning, match="model= is deprecated") as caught:
        opt = TreeOptimizer(space, model=options)
    assert caught[0].filename == __file__  # the warning names the caller's line
    assert opt.strategy.options is options
    with pytest.warns(FutureWarning, match="use strategy="):
        result = minimize(lambda p: p["x"], space, 3, seed=0, model="add_tree_ucb")
    assert len(result.history) == 3
    with pytest.raises(TypeError, match="give strategy= only"):
        TreeOptimizer(space, strategy="add_tree", model="add_tree")


def test_a_strategy_serves_one_optimizer():
    space = TreeSpace(Vertex([Real("x", 0.0, 1.0)]))
    strategy = AddTreeStrategy()
    TreeOptimizer(space, strategy=strategy)
    with pytest.raises(ValueError, match="already serves another optimizer"):
        TreeOptimizer(space, strategy=strategy)


def test_a_scratch_copy_fits_without_touching_the_strategy_and_skips_its_model():
    from treebo.test_functions import Jenatton

    problem = Jenatton()
    opt = TreeOptimizer(problem.space, seed=0, n_initial=5)
    for _ in range(6):
        params = opt.ask()
        opt.tell(params, problem.objective(params))
    strategy = opt.strategy
    model, state = strategy.last_model, strategy.state_dict()
    copied = strategy.scratch_copy()
    assert copied.last_model is None and strategy.last_model is model
    assert copied.state_dict() == state
    obs = opt.observations()
    copied.fit(
        dataclasses.replace(
            obs,
            X=obs.X[:-1],
            y=obs.y[:-1],
            kinds=obs.kinds[:-1],
            failed=obs.failed[:-1],
        )
    )
    assert copied.last_model.train_inputs[0].shape[0] == 5
    assert strategy.state_dict() == state and strategy.last_model is model


def test_a_registered_subclass_is_found_by_name_and_options_keep_the_built_in():
    # (options name a strategy only through the deprecated model=)
    class Variant(AddTreeStrategy):
        name = "test_variant"

    register_strategy(Variant)
    try:
        assert type(make_strategy("test_variant")) is Variant
        # options of the built-in strategy still name the built-in one
        assert type(strategy_from_model(AddTreeOptions())) is AddTreeStrategy
    finally:
        del STRATEGIES["test_variant"]
    with pytest.raises(TypeError, match="Strategy subclass"):
        register_strategy(int)


def test_a_strategy_checks_its_options_type_and_dtype():
    with pytest.raises(TypeError, match="options of the 'add_tree' model"):
        AddTreeStrategy(AddTreeUCBOptions())
    with pytest.raises(TypeError, match="dtype must be a floating point"):
        AddTreeStrategy(dtype=torch.int32)
    strategy = AddTreeStrategy(dtype=torch.float32)
    assert strategy.dtype == torch.float32 and strategy.device.type == "cpu"
    assert isinstance(strategy, Strategy)
    with pytest.raises(ValueError, match="dtype must be torch.float64.*float16"):
        AddTreeStrategy(dtype=torch.float16)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_device_this_machine_lacks_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="device: 'cuda' is not available"):
        AddTreeStrategy(device="cuda")


def test_is_observed_compares_to_a_fraction_of_each_range():
    space = TreeSpace(Vertex([Real("a", 0.0, 10.0), Real("b", 0.0, 1.0)]))
    X = torch.tensor([[5.0, 0.5], [1.0, 0.1]], dtype=torch.float64)
    near = torch.tensor([5.0 + 0.5 * REPEAT_TOL * 10, 0.5], dtype=torch.float64)
    far = torch.tensor([5.0 + 2 * REPEAT_TOL * 10, 0.5], dtype=torch.float64)
    assert is_observed(space, near, X, REPEAT_TOL)
    assert not is_observed(space, far, X, REPEAT_TOL)


def test_real_only_strategies_name_the_first_other_parameter():
    space = TreeSpace(Vertex([Real("x", 0.0, 1.0), Categorical("c", ["a", "b"])]))
    with pytest.raises(ConfigurationError, match="strategy='treed'.*'c'"):
        require_real_parameters(space, "treed")
    require_real_parameters(TreeSpace(Vertex([Real("x", 0.0, 1.0)])), "treed")


class EntryPointVariant(AddTreeStrategy):
    """A strategy another package declares in its ``treebo.strategies`` entry points."""

    name = "entry_point_variant"


def test_strategies_of_other_packages_load_from_their_entry_points(monkeypatch):
    import importlib.metadata

    from treebo.strategies import base

    group = base.ENTRY_POINT_GROUP
    declared = [
        importlib.metadata.EntryPoint(
            "entry_point_variant", f"{__name__}:EntryPointVariant", group
        ),
        importlib.metadata.EntryPoint("broken", "no_such_package:Strategy", group),
    ]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: declared[:])
    monkeypatch.setattr(base, "_entry_points_loaded", False)
    try:
        with pytest.warns(RuntimeWarning, match="'broken'.*did not load"):
            strategy = make_strategy("entry_point_variant")
        assert type(strategy) is EntryPointVariant
        assert {"add_tree", "bktf"} <= set(STRATEGIES)  # the built-ins too
    finally:
        STRATEGIES.pop("entry_point_variant", None)
