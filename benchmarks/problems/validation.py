"""A validation suite of tree-structured problems of varied shapes.

The loop's defaults were first tuned on P1 and P2 (Jenatton trees: narrow
quadratic leaves, the best branch also the best on average). These problems
have other shapes, so that defaults can be chosen on some and confirmed on
others:

- ``v_mislead``: two branches; the better one is wider (4-D) and worse on
  average, its basin a quarter of the box wide; the other (1-D) is flat at 0.3.
- ``v_mislead_2d``: ``v_mislead`` with a 2-D wide branch, whose basin random
  search finds in about one sample of 9 on that branch.
- ``v_wide``: one choice of 8 plain branches (no shared parameters), 2-D
  quadratic leaves with offsets 0.0 to 0.7 and optima at different places.
- ``v_flags``: three on/off flags at the root, each enabling one parameter
  that helps only near its own optimum (8 paths; the best turns two on).
- ``v_shared``: a depth-2 tree whose shared root parameter matters most.
- ``v_noisy``: P1(a) with Gaussian noise of standard deviation 0.02 (regret on
  the noise-free values).
- ``v_kinks``: P1(a)'s tree with non-smooth leaves (absolute values and a
  step in the shared parameters).
- ``v_unbalanced``: P2's construction, unbalanced, depth 4.
- ``v_offcentre``: P1(a) with every leaf's optimum off its box's centre.
- ``v_shared_curve``: ``v_offcentre`` whose shared parameters act quadratically,
  each with its optimum inside its range (a linear model of them puts it on a
  bound).
- ``v_moving``: P1(a)'s tree whose leaf optima move with the shared ancestor's
  parameter (an interaction an additive model must learn).

Every problem is minimized; ``optimal_value`` is the noise-free minimum,
``true_value(params)`` the noise-free value and ``best_branch`` the root
choice's label at the optimum; a run whose best point has another label
there is on a wrong branch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from treebo.space import Choice, Real, TreeSpace, Vertex
from treebo.test_functions import GeneralizedJenatton, Jenatton


class ValidationProblem:
    """A minimization problem: ``objective`` (maybe noisy), ``true_value``."""

    space: TreeSpace
    optimal_value: float
    root_choice: str
    noise_sd: float = 0.0

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)
        self._best_branch: Any = None

    @property
    def best_branch(self) -> Any:
        """The root choice's label at the best of 4,000 random points per path."""
        if self._best_branch is None:
            X = self.space.sample(4000 * self.space.num_paths, seed=0, by="path")
            configs = self.space.to_dicts(X)
            best = min(configs, key=self.true_value)
            self._best_branch = best[self.root_choice]
        return self._best_branch

    def reseed(self, seed: int) -> None:
        """Seed the noise of one run."""
        self.rng = np.random.default_rng(10_007 + seed)

    def true_value(self, params: dict[str, Any]) -> float:
        raise NotImplementedError

    def objective(self, params: dict[str, Any]) -> float:
        value = self.true_value(params)
        if self.noise_sd:
            value += self.noise_sd * float(self.rng.standard_normal())
        return value


class Misleading(ValidationProblem):
    """Two branches: ``narrow`` (1-D) near 0.3 everywhere, ``wide`` (``dims``-D) at
    1.2 except in a Gaussian basin of width 0.25 that reaches 0."""

    root_choice, optimal_value = "branch", 0.0

    def __init__(self, dims: int = 4) -> None:
        super().__init__()
        wide = Vertex([Real(f"w{i}", 0, 1) for i in range(dims)])
        narrow = Vertex([Real("n0", 0, 1)])
        self.space = TreeSpace(
            Vertex(choices=[Choice("branch", {"narrow": narrow, "wide": wide})])
        )
        self.center = np.array([0.7, 0.25, 0.6, 0.4])[:dims]

    def true_value(self, params):
        if params["branch"] == "narrow":
            return 0.3 + 0.05 * (params["n0"] - 0.5) ** 2
        z = np.array([params[f"w{i}"] for i in range(len(self.center))])
        return float(
            1.2 * (1 - np.exp(-np.sum((z - self.center) ** 2) / (2 * 0.25**2)))
        )


class WidePlain(ValidationProblem):
    root_choice, optimal_value = "leaf", 0.0

    def __init__(self) -> None:
        super().__init__()
        self.space = TreeSpace(
            Vertex(
                choices=[
                    Choice(
                        "leaf",
                        {
                            k: Vertex([Real(f"a{k}", -1, 1), Real(f"b{k}", -1, 1)])
                            for k in range(8)
                        },
                    )
                ]
            )
        )
        order = [3, 6, 1, 7, 2, 0, 5, 4]  # leaf k has offset 0.1 * order[k]
        self.offset = {k: 0.1 * order[k] for k in range(8)}
        self.optimum = {k: (math.sin(k), math.cos(2 * k) * 0.8) for k in range(8)}

    def true_value(self, params):
        k = params["leaf"]
        a0, b0 = self.optimum[k]
        return (
            self.offset[k] + (params[f"a{k}"] - a0) ** 2 + (params[f"b{k}"] - b0) ** 2
        )


class Flags(ValidationProblem):
    root_choice = "f0"

    def __init__(self) -> None:
        super().__init__()
        self.gain = {0: 0.5, 1: 0.3}  # flag 2 on never pays off
        self.best = {0: 0.8, 1: 0.2}
        flags = [
            Choice(f"f{i}", {"off": Vertex(), "on": Vertex([Real(f"r{i}", 0, 1)])})
            for i in range(3)
        ]
        self.space = TreeSpace(Vertex([Real("base", -1, 1)], flags))
        self.optimal_value = 1.0 - 0.5 - 0.3

    def true_value(self, params):
        value = 1.0 + (params["base"] - 0.3) ** 2
        for i, gain in self.gain.items():
            if params[f"f{i}"] == "on":
                value -= gain * (1 - 8 * (params[f"r{i}"] - self.best[i]) ** 2)
        if params["f2"] == "on":
            value += 0.1 + 0.2 * params["r2"]
        return value


class SharedHeavy(ValidationProblem):
    root_choice, optimal_value = "c", 0.05

    def __init__(self) -> None:
        super().__init__()
        leaves = [Vertex([Real(f"x{j}", -1, 1)]) for j in range(4)]
        self.space = TreeSpace(
            Vertex(
                [Real("s", 0, 1)],
                [
                    Choice(
                        "c",
                        {
                            0: Vertex(
                                [Real("u", 0, 1)],
                                [Choice("d", {0: leaves[0], 1: leaves[1]})],
                            ),
                            1: Vertex(
                                [Real("v", 0, 1)],
                                [Choice("e", {0: leaves[2], 1: leaves[3]})],
                            ),
                        },
                    )
                ],
            )
        )

    def true_value(self, params):
        value = 4.0 * (params["s"] - 0.7) ** 2
        if params["c"] == 0:
            value += 0.1 + 0.2 * params["u"] + 0.05 * params["d"]
            leaf = "x0" if params["d"] == 0 else "x1"
        else:
            value += 0.05 + 0.2 * (params["v"] - 0.5) ** 2 + 0.05 * params["e"]
            leaf = "x2" if params["e"] == 0 else "x3"
        return value + 0.3 * (params[leaf] - 0.2) ** 2


class NoisyJenatton(ValidationProblem):
    root_choice, optimal_value, noise_sd = "x1", 0.1, 0.02

    def __init__(self) -> None:
        super().__init__()
        self.base = Jenatton("paper")
        self.space = self.base.space

    def true_value(self, params):
        return self.base.objective(params)


class Kinks(ValidationProblem):
    root_choice, optimal_value = "x1", 0.1

    def __init__(self) -> None:
        super().__init__()
        self.space = Jenatton("paper").space

    def true_value(self, params):
        shared = params["r8"] if params["x1"] == 0 else params["r9"]
        step = 0.05 * math.floor(4 * shared)
        if params["x1"] == 0:
            leaf = (
                abs(params["x4"] - 0.3)
                if params["x2"] == 0
                else abs(params["x5"]) + 0.1
            )
            return leaf + 0.1 + step + 0.2 * shared
        leaf = abs(params["x6"]) + 0.2 if params["x3"] == 0 else abs(params["x7"]) + 0.3
        return leaf + 0.1 + step + 0.2 * shared


class Unbalanced(ValidationProblem):
    root_choice, optimal_value = "c0", 0.1

    def __init__(self) -> None:
        super().__init__()
        self.base = GeneralizedJenatton(depth=4, balanced=False)
        self.space = self.base.space
        self.optimal_value = float(self.base.optimal_value)
        self.root_choice = self.space.parameter_names[min(self.space.choice_columns)]

    def true_value(self, params):
        return self.base.objective(params)


class OffCentre(ValidationProblem):
    """P1(a) with each leaf's optimum away from its box's centre: the leaf
    ``x_l`` contributes ``(x_l - c_l)^2`` instead of ``x_l^2``; the shared
    ``r8``, ``r9`` enter linearly as in P1."""

    root_choice, optimal_value = "x1", 0.1

    def __init__(self) -> None:
        super().__init__()
        self.space = Jenatton("paper").space
        self.leaf_optimum = {"x4": 0.55, "x5": -0.7, "x6": 0.35, "x7": -0.45}
        self.offset = {"x4": 0.1, "x5": 0.2, "x6": 0.3, "x7": 0.4}

    def true_value(self, params):
        leaf = next(k for k in self.leaf_optimum if k in params)
        shared = "r8" if "r8" in params else "r9"
        r = params[shared]
        return (
            self.offset[leaf]
            + self.leaf_term(leaf, params[leaf], r)
            + self.shared_term(shared, r)
        )

    def leaf_term(self, leaf: str, x: float, r: float) -> float:
        """The leaf's contribution at its parameter ``x`` (shared value ``r``)."""
        return (x - self.leaf_optimum[leaf]) ** 2

    def shared_term(self, shared: str, r: float) -> float:
        """The shared parameter's contribution."""
        return r


class SharedCurve(OffCentre):
    """``v_offcentre`` with the shared ``r8``, ``r9`` entering as
    ``(r - c_r)^2``, ``c_r8 = 0.7`` and ``c_r9 = 0.3``: a curved effect whose
    optimum is inside the range."""

    def __init__(self) -> None:
        super().__init__()
        self.shared_optimum = {"r8": 0.7, "r9": 0.3}

    def shared_term(self, shared: str, r: float) -> float:
        return (r - self.shared_optimum[shared]) ** 2


class MovingOptimum(OffCentre):
    """P1(a)'s tree where each leaf's optimum moves with its shared ancestor's
    parameter: ``x_l`` contributes ``(x_l - c_l - (r - 1/2))^2`` and the shared
    ``r`` (``r8`` or ``r9``) adds ``(r - 0.7)^2 / 2``; the optimum is at
    ``r = 0.7``, ``x_l = c_l + 0.2``. A sum of per-vertex terms sees only the
    leaf's optimum averaged over ``r``."""

    def __init__(self) -> None:
        super().__init__()
        self.leaf_optimum = {"x4": 0.3, "x5": -0.2, "x6": 0.1, "x7": -0.3}

    def leaf_term(self, leaf: str, x: float, r: float) -> float:
        return (x - (self.leaf_optimum[leaf] + (r - 0.5))) ** 2

    def shared_term(self, shared: str, r: float) -> float:
        return 0.5 * (r - 0.7) ** 2


VALIDATION_PROBLEMS = {
    "v_offcentre": OffCentre,
    "v_shared_curve": SharedCurve,
    "v_moving": MovingOptimum,
    "v_mislead": Misleading,
    "v_mislead_2d": lambda: Misleading(dims=2),
    "v_wide": WidePlain,
    "v_flags": Flags,
    "v_shared": SharedHeavy,
    "v_noisy": NoisyJenatton,
    "v_kinks": Kinks,
    "v_unbalanced": Unbalanced,
}
