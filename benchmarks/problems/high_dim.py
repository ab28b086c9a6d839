"""High-dimensional problems of paper 002 (P4, P5) as tensor objectives.

Every problem is minimized over a box and has a known minimum:

- P4, additive GP functions on ``[0, 1]^d``, observed with N(0, 0.15^2) noise
  (regret is measured on the noise-free function): ``star10``, ``star25``,
  ``grid3x3``, ``partition12``, ``ancestry132``. Their true graph is kept for
  the F1 score of learned edges.
- P5, deterministic: ``styblinski100``, ``styblinski250`` (on ``[-4, 4]^d``),
  ``styblinski250_shifted`` (optimum moved by a seeded shift so that it is not
  at the same place on every axis), ``rosenbrock20`` (``[-2, 2]^20``),
  ``hartmann6_20`` and ``hartmann6_100`` (Hartmann6 on 6 of 20 or 100
  dimensions, the others dummies, the 6 at seeded random positions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import torch
from botorch.test_functions import Hartmann, Rosenbrock, StyblinskiTang
from torch import Tensor

from treebo.loop.box import box_space
from treebo.space import TreeSpace
from treebo.test_functions import AdditiveGPFunction, additive_graph

P4_NOISE = 0.15


@dataclass
class HighDimProblem:
    """A tensor objective over a box with its noise-free minimum.

    Attributes:
        name: Problem name.
        bounds: ``2 x d``.
        true: Noise-free ``f(X)`` for ``n x d`` points.
        optimal_value: Its minimum.
        noise_std: Observation noise (0: deterministic).
        edges: The true dependency graph, where there is one.
    """

    name: str
    bounds: Tensor
    true: object
    optimal_value: float
    noise_std: float = 0.0
    edges: Tensor | None = None
    generator: torch.Generator = field(default_factory=torch.Generator)

    @property
    def dim(self) -> int:
        return self.bounds.shape[-1]

    @cached_property
    def space(self) -> TreeSpace:
        """The box as a space of reals ``x0 .. x{d-1}``."""
        return box_space(self.bounds)

    def objective(self, params: dict[str, Any]) -> float:
        """A noisy observation of one configuration (:meth:`observe`)."""
        return float(self.observe(self.space.to_tensor([params]))[0])

    def true_value(self, params: dict[str, Any]) -> float:
        """The noise-free value of one configuration."""
        return float(self.true(self.space.to_tensor([params]))[0])

    def observe(self, X: Tensor) -> Tensor:
        """Noisy observations of ``f(X)`` (the problem's own noise stream)."""
        y = self.true(X)
        if self.noise_std:
            y = y + self.noise_std * torch.randn(
                y.shape, generator=self.generator, dtype=y.dtype
            )
        return y


def _additive(name: str, graph: str, size, seed: int) -> HighDimProblem:
    d, edges = additive_graph(graph, size)
    f = AdditiveGPFunction(d, edges, seed=seed)
    bounds = torch.tensor([[0.0] * d, [1.0] * d], dtype=torch.float64)
    return HighDimProblem(
        name, bounds, f, f.optimal_value, noise_std=P4_NOISE, edges=edges
    )


def _styblinski(name: str, d: int, shift_seed: int | None) -> HighDimProblem:
    f = StyblinskiTang(dim=d)
    shift = torch.zeros(d, dtype=torch.float64)
    if shift_seed is not None:
        g = torch.Generator().manual_seed(shift_seed)
        shift = torch.rand(d, generator=g, dtype=torch.float64) * 2 - 1
    bounds = torch.tensor([[-4.0] * d, [4.0] * d], dtype=torch.float64)
    # f(x - shift) on the same box: the optimum moves to -2.9035 + shift (in box).
    return HighDimProblem(name, bounds, lambda X: f(X - shift), -39.16599 * d)


def _hartmann(name: str, d: int) -> HighDimProblem:
    f = Hartmann(dim=6)
    g = torch.Generator().manual_seed(d)
    active = torch.randperm(d, generator=g)[:6]
    bounds = torch.tensor([[0.0] * d, [1.0] * d], dtype=torch.float64)
    return HighDimProblem(name, bounds, lambda X: f(X[..., active]), -3.32237)


def _rosenbrock(name: str, d: int) -> HighDimProblem:
    f = Rosenbrock(dim=d)
    bounds = torch.tensor([[-2.0] * d, [2.0] * d], dtype=torch.float64)
    return HighDimProblem(name, bounds, f, 0.0)


HIGH_DIM_PROBLEMS = {
    "star10": lambda seed: _additive("star10", "star", 10, seed),
    "star25": lambda seed: _additive("star25", "star", 25, seed),
    "grid3x3": lambda seed: _additive("grid3x3", "grid", (3, 3), seed),
    "partition12": lambda seed: _additive("partition12", "partition", 12, seed),
    "ancestry132": lambda seed: _additive("ancestry132", "ancestry", 0, seed),
    "styblinski100": lambda seed: _styblinski("styblinski100", 100, None),
    "styblinski250": lambda seed: _styblinski("styblinski250", 250, None),
    "styblinski250_shifted": lambda seed: _styblinski(
        "styblinski250_shifted", 250, 250
    ),
    "rosenbrock20": lambda seed: _rosenbrock("rosenbrock20", 20),
    "hartmann6_20": lambda seed: _hartmann("hartmann6_20", 20),
    "hartmann6_100": lambda seed: _hartmann("hartmann6_100", 100),
}
