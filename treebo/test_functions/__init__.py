"""Tree-structured test problems in BoTorch's ``SyntheticTestFunction`` style."""

from treebo.test_functions.jenatton import (
    GeneralizedJenatton,
    Jenatton,
    generalized_jenatton_space,
    jenatton_space,
)

__all__ = [
    "GeneralizedJenatton",
    "Jenatton",
    "generalized_jenatton_space",
    "jenatton_space",
]
