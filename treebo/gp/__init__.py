"""GP utilities shared by the model families: fitting, cached solves, correlations."""

from treebo.gp.cached_solve import CachedSolveMixin
from treebo.gp.correlation import pairwise_sq_dist, stationary_correlation
from treebo.gp.fit import (
    NoiseFloorLikelihood,
    fit_model,
    loo_log_densities,
    loo_log_predictive,
    noise_floor_likelihood,
    noise_floor_likelihood_options,
    predicts_better,
)

__all__ = [
    "CachedSolveMixin",
    "fit_model",
    "loo_log_densities",
    "loo_log_predictive",
    "NoiseFloorLikelihood",
    "noise_floor_likelihood",
    "noise_floor_likelihood_options",
    "pairwise_sq_dist",
    "predicts_better",
    "stationary_correlation",
]
