"""Continuous non-stationary problems for the treed GP (P6, P7) as loop problems.

Each wraps a BoTorch test function of :mod:`treebo.test_functions` as a space of
real parameters (one vertex) and an ``objective(params)`` to minimize.
"""

from __future__ import annotations

import torch
from botorch.test_functions.synthetic import SyntheticTestFunction

from treebo.space import Real, TreeSpace, Vertex
from treebo.test_functions import RKHS, Exp2D


class ContinuousProblem:
    """A ``SyntheticTestFunction`` on a one-vertex space of reals ``x0, x1, ...``."""

    def __init__(self, function: SyntheticTestFunction) -> None:
        self.function = function
        self.names = [f"x{i}" for i in range(function.dim)]
        lower, upper = function.bounds.double()
        self.space = TreeSpace(
            Vertex(
                [
                    Real(name, float(lo), float(hi))
                    for name, lo, hi in zip(self.names, lower, upper, strict=True)
                ]
            )
        )
        self.optimal_value = float(function.optimal_value)

    def objective(self, params: dict) -> float:
        x = torch.tensor([[params[n] for n in self.names]], dtype=torch.float64)
        return float(self.function(x))


NONSTATIONARY_PROBLEMS = {
    "rkhs": lambda: ContinuousProblem(RKHS()),
    "exp2d": lambda: ContinuousProblem(Exp2D()),
}
