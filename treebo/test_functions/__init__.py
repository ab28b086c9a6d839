"""Test problems in BoTorch's ``SyntheticTestFunction`` style: tree-structured,
a real model-selection task, non-stationary functions, and functions drawn
from additive GPs over a graph."""

from treebo.test_functions.additive import AdditiveGPFunction, additive_graph
from treebo.test_functions.jenatton import (
    PAPER_001_TREES,
    GeneralizedJenatton,
    Jenatton,
    generalized_jenatton_space,
    jenatton_space,
)
from treebo.test_functions.model_selection import ModelSelection, model_selection_space
from treebo.test_functions.nonstationary import RKHS, Exp2D

__all__ = [
    "PAPER_001_TREES",
    "RKHS",
    "AdditiveGPFunction",
    "Exp2D",
    "GeneralizedJenatton",
    "Jenatton",
    "additive_graph",
    "ModelSelection",
    "generalized_jenatton_space",
    "jenatton_space",
    "model_selection_space",
]
