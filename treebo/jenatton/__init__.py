"""Jenatton et al.'s semi-parametric ``tree`` model, ``tree-nonlinear``, and
independent GPs per leaf: the leaves and shared features
([`LeafLayout`][treebo.jenatton.leaves.LeafLayout],
[`SharedFeatures`][treebo.jenatton.leaves.SharedFeatures]), the models
([`JenattonTreeGP`][treebo.jenatton.model.JenattonTreeGP],
[`IndependentLeafGP`][treebo.jenatton.model.IndependentLeafGP]), their fit
([`fit_leaf_gp()`][treebo.jenatton.fit.fit_leaf_gp]) and the loop's
``"jenatton_tree"``, ``"jenatton_tree_nonlinear"`` and ``"independent"``
strategies.
"""

from treebo.jenatton.fit import fit_leaf_gp
from treebo.jenatton.leaf_gp import LeafGP
from treebo.jenatton.leaves import LeafLayout, SharedFeatures
from treebo.jenatton.model import IndependentLeafGP, JenattonTreeGP
from treebo.jenatton.strategy import (
    IndependentLeafOptions,
    IndependentLeafStrategy,
    JenattonTreeNonlinearOptions,
    JenattonTreeNonlinearStrategy,
    JenattonTreeOptions,
    JenattonTreeStrategy,
)

__all__ = [
    "IndependentLeafGP",
    "IndependentLeafOptions",
    "IndependentLeafStrategy",
    "JenattonTreeGP",
    "JenattonTreeNonlinearOptions",
    "JenattonTreeNonlinearStrategy",
    "JenattonTreeOptions",
    "JenattonTreeStrategy",
    "LeafGP",
    "LeafLayout",
    "SharedFeatures",
    "fit_leaf_gp",
]
