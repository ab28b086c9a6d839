"""Tree-structured test problems in BoTorch's ``SyntheticTestFunction`` style."""

from treebo.test_functions.jenatton import (
    GeneralizedJenatton,
    Jenatton,
    generalized_jenatton_space,
    jenatton_space,
)
from treebo.test_functions.model_selection import ModelSelection, model_selection_space

__all__ = [
    "GeneralizedJenatton",
    "Jenatton",
    "ModelSelection",
    "generalized_jenatton_space",
    "jenatton_space",
    "model_selection_space",
]
