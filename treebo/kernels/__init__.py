"""GPyTorch kernels for tree-structured spaces."""

from treebo.kernels.add_tree import AddTreeKernel
from treebo.kernels.correlation import stationary_correlation
from treebo.kernels.options import LOOP_KERNEL_OPTIONS, AddTreeKernelOptions
from treebo.kernels.tree_additive import TreeAdditiveKernel
from treebo.kernels.treed import TreedLeafKernel, leaf_base_kernel

__all__ = [
    "LOOP_KERNEL_OPTIONS",
    "AddTreeKernel",
    "AddTreeKernelOptions",
    "TreeAdditiveKernel",
    "TreedLeafKernel",
    "leaf_base_kernel",
    "stationary_correlation",
]
