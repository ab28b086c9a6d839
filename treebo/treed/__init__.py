"""Treed GPs for non-stationary functions (HTBO, Assael et al., 2014).

One family, one folder: the partition of the input box
([`TreePartition`][treebo.treed.partition.TreePartition], grown greedily and pruned by
leave-one-out), the per-leaf kernel, the model ([`TreedGP`][treebo.treed.model.TreedGP],
independent GPs per leaf whose hyper-parameters are fitted jointly under a weighted
pseudo-likelihood, optionally with a Kumaraswamy input warp), and the loop's ``"treed"``
strategy.
"""

from treebo.treed.fit import WeightedPseudoLikelihood, fit_treed_gp
from treebo.treed.kernel import TreedLeafKernel, leaf_base_kernel
from treebo.treed.model import TreedGP
from treebo.treed.partition import TreePartition, build_partition
from treebo.treed.pruning import loo_prune
from treebo.treed.strategy import TreedOptions, TreedStrategy

__all__ = [
    "TreePartition",
    "TreedGP",
    "TreedLeafKernel",
    "TreedOptions",
    "TreedStrategy",
    "WeightedPseudoLikelihood",
    "build_partition",
    "fit_treed_gp",
    "leaf_base_kernel",
    "loo_prune",
]
