"""Optimizers for acquisition functions on tree-structured spaces."""

from treebo.optim.lbfgsb import maximize_batched
from treebo.optim.tree_optimize import (
    TreeCandidate,
    optimize_acqf_tree,
    optimize_add_tree_ucb,
)

__all__ = [
    "TreeCandidate",
    "maximize_batched",
    "optimize_acqf_tree",
    "optimize_add_tree_ucb",
]
