import pytest

from treebo.add_tree import LOOP_KERNEL_OPTIONS, AddTreeKernel, AddTreeKernelOptions


def test_options_are_the_kernels_keyword_arguments():
    import inspect

    names = AddTreeKernelOptions.names()
    assert set(names) <= set(inspect.signature(AddTreeKernel).parameters)
    assert LOOP_KERNEL_OPTIONS.as_kwargs()["vertex_bias"] == "all"
    kernel = AddTreeKernel(3, {0: {0: [1], 1: [2]}}, **LOOP_KERNEL_OPTIONS.as_kwargs())
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
        ({"inherit_ancestors": True, "ancestor_interactions": True}, "cannot both"),
    ],
)
def test_bad_options_name_the_option(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AddTreeKernelOptions(**kwargs)
