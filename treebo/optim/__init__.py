"""Optimizers for acquisition functions on tree-structured spaces."""

from treebo.optim.lbfgsb import maximize_batched
from treebo.optim.local_refinement import local_refinement_candidate
from treebo.optim.message_passing import message_passing_discrete
from treebo.optim.mixed import NeighbourTable, optimize_acqf_mixed_tree
from treebo.optim.sobol import optimize_acqf_sobol
from treebo.optim.tree_optimize import (
    TreeCandidate,
    optimize_acqf_tree,
    optimize_add_tree_ucb,
)
from treebo.optim.zooming import optimize_acqf_zooming

__all__ = [
    "NeighbourTable",
    "TreeCandidate",
    "local_refinement_candidate",
    "maximize_batched",
    "message_passing_discrete",
    "optimize_acqf_mixed_tree",
    "optimize_acqf_sobol",
    "optimize_acqf_tree",
    "optimize_acqf_zooming",
    "optimize_add_tree_ucb",
]
