"""The Add-Tree options (kernel and strategies): checks that name the parameter,
presets."""

from __future__ import annotations

import pytest

from treebo.add_tree import (
    LOOP_KERNEL_OPTIONS,
    AddTreeKernel,
    AddTreeKernelOptions,
    AddTreeOptions,
    AddTreeUCBOptions,
    LocalStepOptions,
)


def test_options_are_the_kernels_keyword_arguments_and_an_interaction_switch():
    import inspect

    names = set(AddTreeKernelOptions.names()) - {"ancestor_interactions"}
    assert names <= set(inspect.signature(AddTreeKernel).parameters)
    assert LOOP_KERNEL_OPTIONS.as_kwargs()["vertex_bias"] == "all"
    kwargs = LOOP_KERNEL_OPTIONS.as_kwargs()
    del kwargs["ancestor_interactions"]
    kernel = AddTreeKernel(3, {0: {0: [1], 1: [2]}}, **kwargs)
    assert kernel.vertex_bias == "all"


def test_vertex_bias_bools_are_normalized():
    assert AddTreeKernelOptions(vertex_bias=True).vertex_bias == "empty"
    assert AddTreeKernelOptions(vertex_bias=False).vertex_bias == "none"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"base_kernel": "rq"}, "base_kernel"),
        ({"vertex_bias": "some"}, "vertex_bias"),
        ({"share_lengthscales": "path"}, "share_lengthscales"),
        ({"share_outputscales": 1}, "share_outputscales"),
        ({"shared_component": "yes"}, "shared_component"),
        ({"ancestor_interactions": 1}, "ancestor_interactions must be a bool"),
    ],
)
def test_bad_options_name_the_option(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AddTreeKernelOptions(**kwargs)


def test_options_are_checked_and_name_the_parameter():
    with pytest.raises(ValueError, match="noise_floor"):
        AddTreeOptions(noise_floor=0.0)
    with pytest.raises(ValueError, match="num_restarts"):
        AddTreeOptions(num_restarts=0)
    with pytest.raises(TypeError, match="kernel must be AddTreeKernelOptions"):
        AddTreeOptions(kernel={"vertex_bias": "all"})
    with pytest.raises(TypeError, match="local must be LocalStepOptions"):
        AddTreeOptions(local=True)
    with pytest.raises(ValueError, match="path_selection"):
        AddTreeUCBOptions(path_selection="max")
    with pytest.raises(ValueError, match="basin_patience"):
        AddTreeUCBOptions(basin_patience=0)
    with pytest.raises(TypeError, match="alternative_kernels must be None or a tuple"):
        AddTreeOptions(alternative_kernels=AddTreeKernelOptions())
    with pytest.raises(TypeError, match="alternative_kernels must be None or a tuple"):
        AddTreeOptions(alternative_kernels=({"vertex_bias": "all"},))
    interacting = AddTreeKernelOptions(ancestor_interactions=True)
    with pytest.raises(ValueError, match="kernel: ancestor_interactions"):
        AddTreeUCBOptions(kernel=interacting)
    with pytest.raises(ValueError, match="mean must be one of"):
        LocalStepOptions(mean="global")
    with pytest.raises(ValueError, match="patience must be an integer"):
        LocalStepOptions(patience=-1)
    with pytest.raises(ValueError, match="vertex_bias"):
        AddTreeKernelOptions(vertex_bias="leaves")
    with pytest.raises(ValueError, match="share_outputscales"):
        AddTreeKernelOptions(share_outputscales="siblings")
    # Each strategy's defaults are its own type's.
    assert AddTreeOptions().kernel.vertex_bias == "all"
    assert AddTreeUCBOptions().kernel.vertex_bias == "none"
    assert AddTreeUCBOptions().local.mean == "constant"


def test_the_paper_preset_is_algorithm_2():
    paper = AddTreeUCBOptions.paper()
    assert paper.path_selection == "sum" and paper.basin_patience is None
    assert paper.local.patience == 0 and paper.local.mean == "constant"
    assert AddTreeUCBOptions.paper(num_restarts=3).num_restarts == 3
    assert AddTreeUCBOptions().path_selection == "joint"  # the loop's default
    assert AddTreeUCBOptions().alternatives() == ()


def test_the_default_alternative_adds_interaction_terms_to_the_kernel():
    (alternative,) = AddTreeOptions().alternatives()
    assert alternative.ancestor_interactions
    assert alternative == AddTreeOptions().kernel.__class__(
        **{**AddTreeOptions().kernel.as_kwargs(), "ancestor_interactions": True}
    )
    assert AddTreeOptions(alternative_kernels=()).alternatives() == ()
