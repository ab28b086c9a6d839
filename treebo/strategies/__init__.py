"""Strategies: what a model family does to turn the history into a proposal.

See [`Strategy`][treebo.strategies.base.Strategy] for the interface and
[`register_strategy()`][treebo.strategies.base.register_strategy] to add one. The
built-in strategies live in their families' folders (``treebo.add_tree``,
``treebo.tree_additive``, ``treebo.treed``, ``treebo.jenatton``, ``treebo.bktf``) and
are re-exported here, loaded on first use.
"""

from treebo._exports import lazy_exports
from treebo.strategies.base import (
    STRATEGIES,
    Observations,
    Proposal,
    Strategy,
    load_strategies,
    make_strategy,
    register_strategy,
)

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "AddTreeOptions": "treebo.add_tree.options",
        "AddTreeUCBOptions": "treebo.add_tree.options",
        "LocalStepOptions": "treebo.add_tree.options",
        "AddTreeStrategy": "treebo.add_tree.strategy",
        "AddTreeUCBStrategy": "treebo.add_tree.strategy",
        "BKTFOptions": "treebo.bktf.strategy",
        "BKTFStrategy": "treebo.bktf.strategy",
        "IndependentLeafOptions": "treebo.jenatton.strategy",
        "IndependentLeafStrategy": "treebo.jenatton.strategy",
        "JenattonTreeOptions": "treebo.jenatton.strategy",
        "JenattonTreeStrategy": "treebo.jenatton.strategy",
        "JenattonTreeNonlinearOptions": "treebo.jenatton.strategy",
        "JenattonTreeNonlinearStrategy": "treebo.jenatton.strategy",
        "TreeAdditiveOptions": "treebo.tree_additive.strategy",
        "TreeAdditiveStrategy": "treebo.tree_additive.strategy",
        "TreedOptions": "treebo.treed.strategy",
        "TreedStrategy": "treebo.treed.strategy",
    },
)

__all__ = [
    "STRATEGIES",
    "AddTreeOptions",
    "AddTreeStrategy",
    "AddTreeUCBOptions",
    "AddTreeUCBStrategy",
    "BKTFOptions",
    "BKTFStrategy",
    "IndependentLeafOptions",
    "IndependentLeafStrategy",
    "JenattonTreeNonlinearOptions",
    "JenattonTreeNonlinearStrategy",
    "JenattonTreeOptions",
    "JenattonTreeStrategy",
    "LocalStepOptions",
    "Observations",
    "Proposal",
    "Strategy",
    "TreeAdditiveOptions",
    "TreeAdditiveStrategy",
    "TreedOptions",
    "TreedStrategy",
    "load_strategies",
    "make_strategy",
    "register_strategy",
]
