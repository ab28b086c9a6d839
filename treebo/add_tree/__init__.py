"""Add-Tree: GPs over conditional search spaces (Ma & Blaschko, 2020).

One family, one folder: the kernel
([`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel], a sum of per-vertex kernels
gated by the activity of each vertex), the model
([`AddTreeGP`][treebo.add_tree.model.AddTreeGP]), the per-vertex UCB
([`AddTreeUCB`][treebo.add_tree.ucb.AddTreeUCB]) and its optimizer (Algorithm 2), the
local refinement of the incumbent, and the loop's two strategies (``"add_tree"``: LogEI;
``"add_tree_ucb"``: Add-Tree-GP-UCB).
"""

from treebo.add_tree.kernel import AddTreeKernel
from treebo.add_tree.kernel_options import LOOP_KERNEL_OPTIONS, AddTreeKernelOptions
from treebo.add_tree.local_refinement import local_refinement_candidate
from treebo.add_tree.model import AddTreeGP, BranchWithoutDataWarning, VertexPosterior
from treebo.add_tree.optimize import optimize_add_tree_ucb
from treebo.add_tree.options import AddTreeOptions, AddTreeUCBOptions, LocalStepOptions
from treebo.add_tree.strategy import AddTreeStrategy, AddTreeUCBStrategy
from treebo.add_tree.ucb import AddTreeUCB, add_tree_beta

__all__ = [
    "LOOP_KERNEL_OPTIONS",
    "AddTreeGP",
    "AddTreeKernel",
    "AddTreeKernelOptions",
    "AddTreeOptions",
    "AddTreeStrategy",
    "AddTreeUCB",
    "AddTreeUCBOptions",
    "AddTreeUCBStrategy",
    "BranchWithoutDataWarning",
    "LocalStepOptions",
    "VertexPosterior",
    "add_tree_beta",
    "local_refinement_candidate",
    "optimize_add_tree_ucb",
]
