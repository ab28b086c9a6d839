"""BoTorch models for tree-structured spaces."""

from treebo.models.add_tree_gp import AddTreeGP, VertexPosterior
from treebo.models.fit import (
    FIT_CRITERIA,
    fit_model,
    loo_log_densities,
    loo_log_predictive,
    noise_floor_likelihood,
    noise_floor_likelihood_options,
)
from treebo.models.partition import TreePartition, build_partition
from treebo.models.partition_pruning import loo_prune
from treebo.models.structure_learning import learn_tree_structure
from treebo.models.tree_additive_gp import (
    ComponentPosterior,
    GridPosterior,
    TreeAdditiveGP,
)
from treebo.models.treed_fit import fit_treed_gp
from treebo.models.treed_gp import TreedGP, WeightedPseudoLikelihood

__all__ = [
    "FIT_CRITERIA",
    "AddTreeGP",
    "ComponentPosterior",
    "GridPosterior",
    "TreeAdditiveGP",
    "TreePartition",
    "TreedGP",
    "VertexPosterior",
    "WeightedPseudoLikelihood",
    "build_partition",
    "fit_model",
    "fit_treed_gp",
    "learn_tree_structure",
    "loo_log_densities",
    "loo_log_predictive",
    "loo_prune",
    "noise_floor_likelihood",
    "noise_floor_likelihood_options",
]
