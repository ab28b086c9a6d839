r"""Kernel structures averaged instead of chosen (issue 68, interactions).

The default fitter keeps the interaction-term alternative only where its
leave-one-out densities are better by more than one standard error, a hard switch
that flips from one proposal to the next on small samples. Here every kernel
setting is fitted and the acquisition averages them with *stacking* weights
(Yao et al., 2018): the mixture weights $w$ on the simplex that maximize the
leave-one-out log score of the mixture,

$$
\hat w = \arg\max_{w \in \Delta_J} \sum_{i=1}^n \log \sum_{j=1}^J w_j\, p_{ij},
\qquad p_{ij} = p_j(y_i \mid X, y_{-i}),
$$

found by the EM iteration of a mixture with fixed components. The acquisition is
$\log \sum_j w_j\, \overline{\mathrm{EI}}_j(x)$ with $\overline{\mathrm{EI}}_j$
each structure's EI integrated over its hyper-parameters (the default search).

=====================  ===========================================================
``treebo_stacked``     the default loop with the main and the interaction kernel
                       averaged by stacking weights
=====================  ===========================================================

Registered as a preset of :mod:`benchmarks.methods.treebo` on import. Sequential
runs only (pending configurations are believed on the main model alone). Not
adopted (docs/design.md, "Step-shaped surfaces"): level with the flat GP on
``v_moving`` and a lower proxy mean, but worse on the confirmation tasks.
"""

from __future__ import annotations

import math

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.exceptions import ModelFittingError
from torch import Tensor

from treebo.add_tree import AddTreeStrategy
from treebo.add_tree.fitting import AddTreeFit
from treebo.add_tree.integrated_ei import IntegratedLogEISearch
from treebo.add_tree.model import AddTreeGP
from treebo.add_tree.options import AddTreeOptions, distinct_kernel
from treebo.gp.fit import loo_log_densities
from treebo.strategies.base import Observations

from .treebo import register_preset

#: Structures whose weight is below this are left out of the acquisition.
MIN_WEIGHT = 0.01


def stacking_weights(log_densities: Tensor, iterations: int = 500) -> Tensor:
    """The stacking weights (``J``) of ``J`` models' leave-one-out log densities
    (``J x n``): EM for the weights of a mixture with fixed components.

    Example:
        >>> good = torch.zeros(20); bad = torch.full((20,), -5.0)
        >>> stacking_weights(torch.stack([good, bad]))[0] > 0.99
        tensor(True)
    """
    J = log_densities.shape[0]
    log_w = torch.full((J, 1), -math.log(J), dtype=log_densities.dtype)
    for _ in range(iterations):
        joint = log_w + log_densities  # J x n
        resp = joint - torch.logsumexp(joint, dim=0, keepdim=True)
        log_w = torch.logsumexp(resp, dim=1, keepdim=True) - math.log(
            log_densities.shape[1]
        )
    return log_w.squeeze(-1).exp()


class StackingFit(AddTreeFit):
    """Every kernel setting fitted; ``weighted``: ``[(weight, model)]`` by
    stacking of their leave-one-out densities; returns the heaviest model."""

    #: The last fit's ``(weight, model)`` pairs (none before the first fit).
    weighted: tuple[tuple[float, AddTreeGP], ...] = ()

    def fit(self, observations: Observations) -> AddTreeGP:
        X, y = observations.X, observations.y
        floor = self.noise_floor(observations.noise)

        def build(kernel):
            return lambda f: self.build(observations, X, y, f, kernel)

        models = [self.fitter.fit(build(self.kernel), floor)]
        kernels = [self.kernel]
        for kernel, fitter in zip(
            self.alternatives, self.alternative_fitters, strict=True
        ):
            if not distinct_kernel(kernel, self.kernel, observations.space):
                continue
            if fitter.state is None and self.fitter.state is not None:
                fitter.state = dict(self.fitter.state)
            try:
                models.append(fitter.fit(build(kernel), floor))
                kernels.append(kernel)
            except (ModelFittingError, RuntimeError):
                continue
        try:
            dens = torch.stack([loo_log_densities(m).reshape(-1) for m in models])
            weights = stacking_weights(dens)
        except RuntimeError:
            weights = torch.zeros(len(models), dtype=X.dtype)
            weights[0] = 1.0
        self.weighted = tuple(
            (float(w), m) for w, m in zip(weights, models, strict=True)
        )
        chosen = int(weights.argmax())
        self.kernel_in_use = kernels[chosen]
        return models[chosen]


class WeightedLogEI(AcquisitionFunction):
    """$\\log \\sum_j w_j \\exp \\alpha_j(x)$ of log-acquisitions ``alpha_j``."""

    def __init__(self, parts: list[tuple[float, AcquisitionFunction]]) -> None:
        super().__init__(parts[0][1].model)
        self.parts = torch.nn.ModuleList([a for _, a in parts])
        self.log_w = [math.log(w) for w, _ in parts]

    def forward(self, X: Tensor) -> Tensor:
        values = torch.stack(
            [lw + a(X) for lw, a in zip(self.log_w, self.parts, strict=True)]
        )
        return torch.logsumexp(values, dim=0)


class StackedSearch(IntegratedLogEISearch):
    """The integrated LogEI of each structure in ``fit.weighted``, mixed by
    weight."""

    def __init__(self, fit: StackingFit, options: AddTreeOptions) -> None:
        super().__init__(options.num_restarts, options.raw_samples)
        self.fit = fit

    def acquisition(self, model: AddTreeGP, y: Tensor) -> AcquisitionFunction:
        kept = [(w, m) for w, m in self.fit.weighted if w >= MIN_WEIGHT]
        if not kept or all(m is not model for _, m in kept):
            return super().acquisition(model, y)
        if len(kept) == 1:
            return super().acquisition(kept[0][1], y)
        total = sum(w for w, _ in kept)
        parts = [
            (w / total, super(StackedSearch, self).acquisition(m, y)) for w, m in kept
        ]
        return WeightedLogEI(parts)


def stacked() -> AddTreeStrategy:
    """The default loop with structures averaged by stacking weights."""
    options = AddTreeOptions()
    fit = StackingFit.from_options(options)
    return AddTreeStrategy(options, fit=fit, search=StackedSearch(fit, options))


register_preset("treebo_stacked", stacked)
