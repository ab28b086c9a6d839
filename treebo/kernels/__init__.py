"""GPyTorch kernels for tree-structured spaces."""

from treebo.kernels.add_tree import AddTreeKernel, stationary_correlation

__all__ = ["AddTreeKernel", "stationary_correlation"]
