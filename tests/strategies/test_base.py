"""The Strategy seam: the registry, make_strategy, and shared checks."""

import pytest
import torch

from treebo import Categorical, ConfigurationError, Real, TreeSpace, Vertex
from treebo.add_tree import AddTreeOptions, AddTreeStrategy, AddTreeUCBOptions
from treebo.strategies import STRATEGIES, Strategy, make_strategy, register_strategy
from treebo.strategies.base import REPEAT_TOL, is_observed, require_real_parameters
from treebo.treed import TreedOptions


def test_make_strategy_takes_a_name_options_or_a_strategy():
    assert {"add_tree", "add_tree_ucb", "tree_additive", "treed"} <= set(STRATEGIES)
    assert type(make_strategy("add_tree")) is AddTreeStrategy
    options = AddTreeOptions(local=None)
    assert make_strategy(options).options is options
    assert make_strategy(AddTreeUCBOptions()).name == "add_tree_ucb"
    assert make_strategy(TreedOptions(warp=True)).options.warp
    strategy = AddTreeStrategy()
    assert make_strategy(strategy) is strategy
    with pytest.raises(ValueError, match="model must be one of"):
        make_strategy("gp")
    with pytest.raises(TypeError, match="got dict"):
        make_strategy({"noise_floor": 1e-4})


def test_a_registered_subclass_is_found_by_name_and_options_keep_the_built_in():
    class Variant(AddTreeStrategy):
        name = "test_variant"

    register_strategy(Variant)
    try:
        assert type(make_strategy("test_variant")) is Variant
        # options of the built-in strategy still name the built-in one
        assert type(make_strategy(AddTreeOptions())) is AddTreeStrategy
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
    with pytest.raises(ConfigurationError, match="model='treed'.*'c'"):
        require_real_parameters(space, "treed")
    require_real_parameters(TreeSpace(Vertex([Real("x", 0.0, 1.0)])), "treed")
