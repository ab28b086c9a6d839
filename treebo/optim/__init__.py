"""Optimizers for acquisition functions on tree-structured spaces.

The generic optimizers live here; the model families' own optimizers
([`optimize_add_tree_ucb()`][treebo.add_tree.optimize.optimize_add_tree_ucb],
[`optimize_acqf_zooming()`][treebo.tree_additive.zooming.optimize_acqf_zooming], ...)
are re-exported at this path and load on first use.
"""

from treebo._exports import lazy_exports
from treebo.optim.lbfgsb import maximize_batched
from treebo.optim.mixed import NeighbourTable, optimize_acqf_mixed_tree
from treebo.optim.pool import optimize_acqf_pool, rows_matching
from treebo.optim.sobol import optimize_acqf_sobol
from treebo.optim.tree_optimize import TreeCandidate, optimize_acqf_tree

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "local_refinement_candidate": "treebo.add_tree.local_refinement",
        "optimize_add_tree_ucb": "treebo.add_tree.optimize",
        "message_passing_discrete": "treebo.tree_additive.message_passing",
        "optimize_acqf_zooming": "treebo.tree_additive.zooming",
    },
)

__all__ = [
    "NeighbourTable",
    "TreeCandidate",
    "local_refinement_candidate",
    "maximize_batched",
    "message_passing_discrete",
    "optimize_acqf_mixed_tree",
    "optimize_acqf_pool",
    "optimize_acqf_sobol",
    "optimize_acqf_tree",
    "optimize_acqf_zooming",
    "optimize_add_tree_ucb",
    "rows_matching",
]
