"""Optimizers for acquisition functions on tree-structured spaces.

The generic optimizers live here; the model families' own optimizers live in their
folders ([`optimize_add_tree_ucb()`][treebo.add_tree.acquisition.optimize_add_tree_ucb],
[`optimize_acqf_zooming()`][treebo.tree_additive.zooming.optimize_acqf_zooming], ...).
"""

from treebo.optim.lbfgsb import maximize_batched
from treebo.optim.mixed import NeighbourTable, optimize_acqf_mixed_tree
from treebo.optim.pool import optimize_acqf_pool, rows_matching
from treebo.optim.sobol import optimize_acqf_sobol
from treebo.optim.tree_optimize import TreeCandidate, optimize_acqf_tree

__all__ = [
    "NeighbourTable",
    "TreeCandidate",
    "maximize_batched",
    "optimize_acqf_mixed_tree",
    "optimize_acqf_pool",
    "optimize_acqf_sobol",
    "optimize_acqf_tree",
    "rows_matching",
]
