"""Bayesian kernelized tensor factorization (BKTF; Lei & Sun, 2023): a fully Bayesian
low-rank surrogate over a grid. The grid ([`Grid`][treebo.bktf.grid.Grid]), the
model's conditionals and Gibbs sampler
([`treebo.bktf.conditionals`][treebo.bktf.conditionals],
[`run_gibbs()`][treebo.bktf.sampler.run_gibbs]), the BoTorch model
([`BKTF`][treebo.bktf.model.BKTF]), the acquisition over the whole grid
([`maximize_over_grid()`][treebo.bktf.acquisition.maximize_over_grid]) and the loop's
``"bktf"`` strategy.
"""

from treebo.bktf.acquisition import (
    MomentAcquisition,
    SampleAcquisition,
    SampleEI,
    SampleQuantile,
    SampleUCB,
    maximize_over_grid,
)
from treebo.bktf.conditionals import BKTFData, BKTFPrior, BKTFState
from treebo.bktf.grid import Grid
from treebo.bktf.model import BKTF, BKTFPosterior
from treebo.bktf.sampler import BKTFSamples, run_gibbs
from treebo.bktf.strategy import BKTFOptions, BKTFStrategy, GridPointAcquisition

__all__ = [
    "BKTF",
    "BKTFData",
    "BKTFOptions",
    "BKTFPosterior",
    "BKTFPrior",
    "BKTFSamples",
    "BKTFState",
    "BKTFStrategy",
    "Grid",
    "GridPointAcquisition",
    "MomentAcquisition",
    "SampleAcquisition",
    "SampleEI",
    "SampleQuantile",
    "SampleUCB",
    "maximize_over_grid",
    "run_gibbs",
]
