"""BoTorch models for tree-structured spaces."""

from treebo.models.add_tree_gp import AddTreeGP, VertexPosterior
from treebo.models.fit import (
    FIT_CRITERIA,
    fit_model,
    noise_floor_likelihood,
    noise_floor_likelihood_options,
)

__all__ = [
    "FIT_CRITERIA",
    "AddTreeGP",
    "VertexPosterior",
    "fit_model",
    "noise_floor_likelihood",
    "noise_floor_likelihood_options",
]
