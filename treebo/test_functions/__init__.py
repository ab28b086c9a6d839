"""Test problems in BoTorch's ``SyntheticTestFunction`` style: tree-structured,
a real model-selection task, and non-stationary functions."""

from treebo.test_functions.jenatton import (
    GeneralizedJenatton,
    Jenatton,
    generalized_jenatton_space,
    jenatton_space,
)
from treebo.test_functions.model_selection import ModelSelection, model_selection_space
from treebo.test_functions.nonstationary import RKHS, Exp2D

__all__ = [
    "RKHS",
    "Exp2D",
    "GeneralizedJenatton",
    "Jenatton",
    "ModelSelection",
    "generalized_jenatton_space",
    "jenatton_space",
    "model_selection_space",
]
