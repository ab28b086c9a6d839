"""Issue 69's noise-prior experiment: the inferred noise under a log-normal prior of
another median (an experiment switch, not a package option).

The package's prior is BoTorch's, ``LogNormal(-4, 1)`` on the noise variance of the
standardized scores (median 0.018). At 20 evaluations of noisy P1(a) it dominates the
fit, which then explains noise as signal (fitted noise a median 0.32 of the truth).

==========================  ====================================================
``treebo_noise_median_0.14``  the default loop, the prior ``LogNormal(-2, 1)``
==========================  ====================================================
"""

from __future__ import annotations

from treebo.add_tree import AddTreeOptions, AddTreeStrategy
from treebo.add_tree.fitting import AddTreeFit

from .treebo import PRESETS, register_preset

#: The prior's (location, scale) of the variant.
WIDER_NOISE_PRIOR = (-2.0, 1.0)


def noise_prior(prior: tuple[float, float] = WIDER_NOISE_PRIOR) -> AddTreeStrategy:
    """The default loop with the inferred noise under ``prior``."""
    fit = AddTreeFit.from_options(AddTreeOptions(), noise_prior=prior)
    return AddTreeStrategy(fit=fit)


if "treebo_noise_median_0.14" not in PRESETS:
    register_preset("treebo_noise_median_0.14", noise_prior)
