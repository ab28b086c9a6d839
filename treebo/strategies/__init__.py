"""Strategies: what a model family does to turn the history into a proposal.

See :class:`~treebo.strategies.base.Strategy` for the interface and
:func:`~treebo.strategies.base.register_strategy` to add one.
"""

from treebo.strategies.add_tree import AddTreeStrategy, AddTreeUCBStrategy
from treebo.strategies.base import (
    STRATEGIES,
    Observations,
    Proposal,
    Strategy,
    make_strategy,
    register_strategy,
)
from treebo.strategies.options import (
    AddTreeOptions,
    AddTreeUCBOptions,
    LocalStepOptions,
)
from treebo.strategies.tree_additive import (
    TreeAdditiveOptions,
    TreeAdditiveStrategy,
)
from treebo.strategies.treed import TreedOptions, TreedStrategy

__all__ = [
    "STRATEGIES",
    "AddTreeOptions",
    "AddTreeStrategy",
    "AddTreeUCBOptions",
    "AddTreeUCBStrategy",
    "LocalStepOptions",
    "Observations",
    "Proposal",
    "Strategy",
    "TreeAdditiveOptions",
    "TreeAdditiveStrategy",
    "TreedOptions",
    "TreedStrategy",
    "make_strategy",
    "register_strategy",
]
