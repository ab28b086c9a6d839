"""Jenatton et al.'s semi-parametric ``tree`` model, ``tree-nonlinear``, and
independent GPs per leaf: models, fitting and their loop strategies."""

from treebo.jenatton.fit import fit_leaf_gp
from treebo.jenatton.leaves import LeafLayout, SharedFeatures
from treebo.jenatton.model import IndependentLeafGP, JenattonTreeGP, LeafGP

__all__ = [
    "IndependentLeafGP",
    "JenattonTreeGP",
    "LeafGP",
    "LeafLayout",
    "SharedFeatures",
    "fit_leaf_gp",
]
