"""Acquisition functions for tree-structured models."""

from treebo.acquisition.add_tree_ucb import AddTreeUCB, add_tree_beta
from treebo.acquisition.fast_analytic import AddTreeLogEI

__all__ = ["AddTreeLogEI", "AddTreeUCB", "add_tree_beta"]
