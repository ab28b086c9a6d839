"""Priors that follow their module to another device.

GPyTorch's ``LogNormalPrior`` keeps ``loc`` and ``scale`` as buffers, but the
``Normal`` distribution underneath holds its own references, so
``module.to(device)`` moves the buffers and leaves the distribution where it
was. A scalar prior does not notice (a 0-dimensional CPU tensor mixes with
tensors on any device); a prior with one ``loc`` per hyper-parameter, such as
the Add-Tree kernel's dimension-scaled lengthscale prior, then evaluates its
log density across devices and fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpytorch.priors import LogNormalPrior as _GPyTorchLogNormalPrior
from torch import Tensor


class LogNormalPrior(_GPyTorchLogNormalPrior):
    """GPyTorch's ``LogNormalPrior`` whose distribution moves with the module.

    The distribution follows the module's device and keeps the dtype it was
    made with, so that the log density, and with it a fit, is the same
    wherever the model runs.

    Example:
        >>> import torch
        >>> prior = LogNormalPrior(torch.zeros(2, 3), torch.ones(2, 3))
        >>> prior.to(torch.float64).base_dist.loc.dtype
        torch.float32
    """

    def _apply(self, fn: Callable[[Tensor], Tensor], *args: Any, **kwargs: Any):
        super()._apply(fn, *args, **kwargs)
        for name in ("loc", "scale"):
            value = getattr(self.base_dist, name)
            setattr(self.base_dist, name, fn(value).to(dtype=value.dtype))
        return self
