"""Acquisition functions for tree-structured models."""

from treebo.acquisition.add_tree_ucb import AddTreeUCB, add_tree_beta

__all__ = ["AddTreeUCB", "add_tree_beta"]
