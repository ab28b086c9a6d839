import torch

from treebo.integrations.botorch import space_from_hierarchical_dependencies
from treebo.space import TreeSpace


def test_the_function_is_the_classmethod():
    deps = {0: {0: [1, 2], 1: [3]}}
    bounds = torch.tensor([[0.0, 0.0, -1.0, 1e-3], [1.0, 1.0, 1.0, 1.0]])
    a = space_from_hierarchical_dependencies(deps, bounds, log_scale=[3])
    b = TreeSpace.from_hierarchical_dependencies(deps, bounds, log_scale=[3])
    assert a.to_hierarchical_dependencies() == b.to_hierarchical_dependencies() == deps
    assert a.parameter_names == b.parameter_names == ["x0", "x1", "x2", "x3"]
    x = torch.tensor([1.0, 0.0, 0.0, -1.0], dtype=torch.float64)
    assert a.to_dict(x) == b.to_dict(x) == {"x0": 1, "x3": 0.1}
