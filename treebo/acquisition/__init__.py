"""Acquisition functions for tree-structured models."""

from treebo.acquisition.add_tree_ucb import AddTreeUCB, add_tree_beta
from treebo.acquisition.tree_additive_ucb import TreeAdditiveUCB, tree_additive_beta

__all__ = ["AddTreeUCB", "TreeAdditiveUCB", "add_tree_beta", "tree_additive_beta"]
