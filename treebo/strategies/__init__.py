"""Strategies: what a model family does to turn the history into a proposal.

See [`Strategy`][treebo.strategies.base.Strategy] for the interface and
[`register_strategy()`][treebo.strategies.base.register_strategy] to add one. The
built-in strategies live in their families' folders (``treebo.add_tree``,
``treebo.tree_additive``, ``treebo.treed``, ``treebo.jenatton``, ``treebo.bktf``), which
register them when a name is first looked up
([`load_strategies()`][treebo.strategies.base.load_strategies]).
"""

from treebo.strategies.base import (
    STRATEGIES,
    Observations,
    Prediction,
    Proposal,
    Strategy,
    load_strategies,
    make_strategy,
    register_strategy,
)

__all__ = [
    "STRATEGIES",
    "Observations",
    "Prediction",
    "Proposal",
    "Strategy",
    "load_strategies",
    "make_strategy",
    "register_strategy",
]
