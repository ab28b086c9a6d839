"""Tree-additive GPs for high-dimensional functions (Han et al., 2021).

One family, one folder: the forest of interacting variables and its zooming schedule,
the kernel ([`TreeAdditiveKernel`][treebo.tree_additive.kernel.TreeAdditiveKernel], one
RBF term per edge and per lone vertex), the model
([`TreeAdditiveGP`][treebo.tree_additive.model.TreeAdditiveGP]), structure learning by
Gibbs sampling, the UCB and its optimizer (message passing on a grid, zoomed in level by
level), and the loop's ``"tree_additive"`` strategy.
"""

from treebo.tree_additive.kernel import TreeAdditiveKernel
from treebo.tree_additive.message_passing import message_passing_discrete
from treebo.tree_additive.model import ComponentPosterior, GridPosterior, TreeAdditiveGP
from treebo.tree_additive.strategy import TreeAdditiveOptions, TreeAdditiveStrategy
from treebo.tree_additive.structure_learning import learn_tree_structure
from treebo.tree_additive.ucb import TreeAdditiveUCB, tree_additive_beta
from treebo.tree_additive.zooming import optimize_acqf_zooming

__all__ = [
    "ComponentPosterior",
    "GridPosterior",
    "TreeAdditiveGP",
    "TreeAdditiveKernel",
    "TreeAdditiveOptions",
    "TreeAdditiveStrategy",
    "TreeAdditiveUCB",
    "learn_tree_structure",
    "message_passing_discrete",
    "optimize_acqf_zooming",
    "tree_additive_beta",
]
