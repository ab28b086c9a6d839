"""BoTorch models for tree-structured spaces (re-exported from their families)."""

from treebo.add_tree.model import AddTreeGP, VertexPosterior
from treebo.bktf.model import BKTF
from treebo.gp.fit import (
    FIT_CRITERIA,
    NoiseFloorLikelihood,
    fit_model,
    loo_log_densities,
    loo_log_predictive,
    noise_floor_likelihood,
    noise_floor_likelihood_options,
)
from treebo.jenatton.fit import fit_leaf_gp
from treebo.jenatton.model import IndependentLeafGP, JenattonTreeGP
from treebo.tree_additive.model import ComponentPosterior, GridPosterior, TreeAdditiveGP
from treebo.tree_additive.structure_learning import learn_tree_structure
from treebo.treed.fit import WeightedPseudoLikelihood, fit_treed_gp
from treebo.treed.model import TreedGP
from treebo.treed.partition import TreePartition, build_partition
from treebo.treed.pruning import loo_prune

__all__ = [
    "FIT_CRITERIA",
    "AddTreeGP",
    "BKTF",
    "ComponentPosterior",
    "GridPosterior",
    "IndependentLeafGP",
    "JenattonTreeGP",
    "TreeAdditiveGP",
    "TreePartition",
    "TreedGP",
    "VertexPosterior",
    "WeightedPseudoLikelihood",
    "build_partition",
    "fit_leaf_gp",
    "fit_model",
    "fit_treed_gp",
    "learn_tree_structure",
    "loo_log_densities",
    "loo_log_predictive",
    "loo_prune",
    "NoiseFloorLikelihood",
    "noise_floor_likelihood",
    "noise_floor_likelihood_options",
]
