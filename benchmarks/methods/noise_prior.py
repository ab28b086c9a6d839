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

from typing import Any

from treebo.add_tree import AddTreeStrategy
from treebo.gp import noise as noise_module

from .treebo import PRESETS, register_preset

#: The prior's (location, scale) of the variant.
WIDER_NOISE_PRIOR = (-2.0, 1.0)


class NoisePrior(AddTreeStrategy):
    """The default loop with the inferred noise under ``WIDER_NOISE_PRIOR``."""

    name = "add_tree_noise_prior"

    def build_model(self, *args: Any, **kwargs: Any) -> Any:
        default = noise_module.INFERRED_NOISE_PRIOR
        noise_module.INFERRED_NOISE_PRIOR = WIDER_NOISE_PRIOR
        try:
            return super().build_model(*args, **kwargs)
        finally:
            noise_module.INFERRED_NOISE_PRIOR = default


if "treebo_noise_median_0.14" not in PRESETS:
    register_preset("treebo_noise_median_0.14", NoisePrior)
