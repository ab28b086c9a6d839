import math

import torch

from treebo.add_tree import AddTreeKernel
from treebo.space import TreeStructure


def test_the_default_lengthscale_prior_is_dimension_scaled_per_group():
    # Root: 2 parameters; two leaves of 1 and 3 parameters (no sharing).
    deps = {2: {0: [3], 1: [4, 5, 6]}}
    kernel = AddTreeKernel(7, deps).double()
    tree = TreeStructure(7, deps)
    dims = tree.vertex_dims.clamp_min(1).to(torch.float64)
    loc = kernel.lengthscale_prior.base_dist.loc
    expected = math.sqrt(2.0) + 0.5 * dims.log()
    torch.testing.assert_close(loc[:, 0], expected)
    # The initial lengthscales are the prior's mode.
    mode = torch.exp(loc - kernel.lengthscale_prior.base_dist.scale**2)
    mask = tree.vertex_column_mask
    # (created in the default dtype, then cast: float32 round-off)
    torch.testing.assert_close(kernel.lengthscale[mask], mode[mask], rtol=1e-6, atol=0)


def test_outputscale_prior_centres_the_path_variance_at_one():
    deps = {0: {0: [1, 2], 1: [3, 4]}, 2: {0: [5], 1: [6]}, 4: {0: [7], 1: [8]}}
    kernel = AddTreeKernel(9, deps).double()
    # at most 2 vertices with parameters on a path: LogNormal(log(1/2), 1)
    loc = kernel.outputscale_prior.base_dist.loc
    torch.testing.assert_close(loc, torch.tensor(math.log(0.5), dtype=loc.dtype))
