"""GPyTorch kernels for tree-structured spaces (re-exported from their families)."""

from treebo.add_tree.kernel import AddTreeKernel
from treebo.add_tree.kernel_options import LOOP_KERNEL_OPTIONS, AddTreeKernelOptions
from treebo.gp.correlation import stationary_correlation
from treebo.tree_additive.kernel import TreeAdditiveKernel
from treebo.treed.kernel import TreedLeafKernel, leaf_base_kernel

__all__ = [
    "LOOP_KERNEL_OPTIONS",
    "AddTreeKernel",
    "AddTreeKernelOptions",
    "TreeAdditiveKernel",
    "TreedLeafKernel",
    "leaf_base_kernel",
    "stationary_correlation",
]
