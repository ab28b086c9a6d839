"""Optimizers for acquisition functions on tree-structured spaces."""

from treebo.optim.lbfgsb import maximize_batched
from treebo.optim.local_refinement import local_refinement_candidate
from treebo.optim.mixed import NeighbourTable, optimize_acqf_mixed_tree
from treebo.optim.sobol import optimize_acqf_sobol
from treebo.optim.tree_optimize import (
    TreeCandidate,
    optimize_acqf_tree,
    optimize_add_tree_ucb,
)

__all__ = [
    "NeighbourTable",
    "TreeCandidate",
    "local_refinement_candidate",
    "maximize_batched",
    "optimize_acqf_mixed_tree",
    "optimize_acqf_sobol",
    "optimize_acqf_tree",
    "optimize_add_tree_ucb",
]
