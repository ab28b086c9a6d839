"""Acquisition functions for tree-structured models (from their families)."""

from treebo.add_tree.ucb import AddTreeUCB, add_tree_beta
from treebo.tree_additive.ucb import TreeAdditiveUCB, tree_additive_beta

__all__ = ["AddTreeUCB", "TreeAdditiveUCB", "add_tree_beta", "tree_additive_beta"]
