"""Priors that follow their module's device and dtype.

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

    Example:
        >>> import torch
        >>> prior = LogNormalPrior(torch.zeros(2, 3), torch.ones(2, 3))
        >>> prior.to(torch.float16).base_dist.loc.dtype
        torch.float16
    """

    def _apply(self, fn: Callable[[Tensor], Tensor], *args: Any, **kwargs: Any):
        super()._apply(fn, *args, **kwargs)
        self.base_dist.loc = fn(self.base_dist.loc)
        self.base_dist.scale = fn(self.base_dist.scale)
        return self
