"""P8's problems (paper 004, BKTF): functions on a grid of a space without choices.

Every problem's grid is ``treebo.bktf.Grid.from_space(space, resolution)`` and its
optimum the best value on that grid; ``n_initial`` and ``budget`` are the problem's own
(the runner, :mod:`benchmarks.grid_bo`, gives every method the same).

==============  ============================================================
``branin``      Branin on a 16 x 16 grid
``damavandi``   Damavandi on ``[0, 14]^2``, 29 x 29
``schaffer``    Schaffer's second function on ``[-10, 10]^2``, 21 x 21
``griewank3``,  Griewank in 3 and 4 dimensions, 21 values each
``griewank4``
``hartmann6``   Hartmann on ``[0, 1]^6``, 11 values each
``svc_cancer``  the 3-fold CV error of an SVC on breast_cancer (kernel,
                scaler, C, gamma), tabulated on its grid
==============  ============================================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import torch
from botorch.test_functions.synthetic import Branin, Griewank, Hartmann

from treebo import Categorical, Real, TreeSpace, Vertex
from treebo.bktf import Grid


@dataclass
class GridProblem:
    """A function on a grid of a space without choices.

    Attributes:
        space: The space (parameters ``x0, x1, ...`` unless named).
        resolution: Grid values per real parameter.
        n_initial: Size of the shared initial design.
        budget: Total evaluations, the initial design included.
        function: ``m x D`` encodings to ``m`` values to minimize.
    """

    space: TreeSpace
    resolution: int
    n_initial: int
    budget: int
    function: Callable[[torch.Tensor], torch.Tensor]

    @property
    def grid(self) -> Grid:
        return Grid.from_space(self.space, self.resolution)

    def objective(self, params: dict) -> float:
        x = self.space.to_tensor([params])
        return float(self.function(x)[0])

    @cached_property
    def optimal_value(self) -> float:
        """The best value on the grid."""
        return float(self.grid_values().min())

    def grid_values(self) -> torch.Tensor:
        """The function at every grid point (flat order)."""
        grid = self.grid
        out = []
        for start in range(0, grid.numel, 2**16):
            flat = torch.arange(start, min(start + 2**16, grid.numel))
            out.append(self.function(grid.points(grid.unflatten(flat))))
        return torch.cat(out)


def _reals(bounds: list[tuple[float, float]]) -> TreeSpace:
    return TreeSpace(
        Vertex([Real(f"x{i}", lo, hi) for i, (lo, hi) in enumerate(bounds)])
    )


def damavandi(X: torch.Tensor) -> torch.Tensor:
    """Damavandi on ``[0, 14]^2``: 0 at (2, 2); ``torch.sinc`` is the
    ``sin(pi t) / (pi t)`` of the definition, exact at ``t = 0``."""
    x1, x2 = X[..., 0], X[..., 1]
    peak = (torch.sinc(x1 - 2) * torch.sinc(x2 - 2)).abs() ** 5
    return (1 - peak) * (2 + (x1 - 7) ** 2 + 2 * (x2 - 7) ** 2)


def schaffer(X: torch.Tensor) -> torch.Tensor:
    """Schaffer N.2 on ``[-10, 10]^2``: 0 at the origin."""
    x1, x2 = X[..., 0], X[..., 1]
    num = torch.sin(x1**2 - x2**2) ** 2 - 0.5
    return 0.5 + num / (1 + 0.001 * (x1**2 + x2**2)) ** 2


def _botorch(function) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda X: function.evaluate_true(X.to(torch.float64))


def svc_space() -> TreeSpace:
    return TreeSpace(
        Vertex(
            [
                Categorical("kernel", ["rbf", "poly", "sigmoid"]),
                Categorical("scaler", ["standard", "minmax"]),
                Real("C", 1e-2, 1e3, log_scale=True),
                Real("gamma", 1e-4, 1e1, log_scale=True),
            ]
        )
    )


class SVCTable:
    """3-fold cross-validated error of an SVC on breast_cancer at every point of
    its grid, computed once per process (a tabular objective with a known
    optimum)."""

    _table: dict[tuple, float] | None = None

    def __init__(self, space: TreeSpace, resolution: int) -> None:
        self.space, self.resolution = space, resolution

    def table(self) -> dict[tuple, float]:
        if SVCTable._table is None:
            from sklearn.datasets import load_breast_cancer
            from sklearn.model_selection import StratifiedKFold, cross_val_score
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import MinMaxScaler, StandardScaler
            from sklearn.svm import SVC

            X, y = load_breast_cancer(return_X_y=True)
            folds = StratifiedKFold(3, shuffle=True, random_state=0)
            grid = Grid.from_space(self.space, self.resolution)
            points = grid.points(grid.unflatten(torch.arange(grid.numel)))
            table = {}
            for row, params in zip(points, self.space.to_dicts(points), strict=True):
                scaler = (
                    StandardScaler()
                    if params["scaler"] == "standard"
                    else MinMaxScaler()
                )
                svc = SVC(
                    kernel=params["kernel"],
                    C=params["C"],
                    gamma=params["gamma"],
                    max_iter=20000,
                )
                score = cross_val_score(make_pipeline(scaler, svc), X, y, cv=folds)
                table[_key(row)] = 1.0 - float(score.mean())
            SVCTable._table = table
        return SVCTable._table

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        table = self.table()
        grid = Grid.from_space(self.space, self.resolution)
        snapped = grid.snap(X.reshape(-1, X.shape[-1]))
        return torch.tensor([table[_key(row)] for row in snapped], dtype=torch.float64)


def _key(row: torch.Tensor) -> tuple:
    return tuple(round(float(v), 9) for v in row)


def grid_problem(name: str) -> GridProblem:
    """The P8 problem ``name`` (see ``GRID_PROBLEMS``)."""
    if name == "branin":
        return GridProblem(_reals([(-5, 10), (0, 15)]), 16, 2, 30, _botorch(Branin()))
    if name == "damavandi":
        return GridProblem(_reals([(0, 14)] * 2), 29, 2, 30, damavandi)
    if name == "schaffer":
        return GridProblem(_reals([(-10, 10)] * 2), 21, 2, 30, schaffer)
    if name in ("griewank3", "griewank4"):
        dim = int(name[-1])
        function = Griewank(dim=dim, bounds=[(-10.0, 10.0)] * dim)
        return GridProblem(
            _reals([(-10, 10)] * dim), 21, dim, 10 * dim, _botorch(function)
        )
    if name == "hartmann6":
        return GridProblem(_reals([(0, 1)] * 6), 11, 6, 40, _botorch(Hartmann(dim=6)))
    if name == "svc_cancer":
        space = svc_space()
        return GridProblem(space, 11, 4, 30, SVCTable(space, 11))
    raise ValueError(f"problem must be one of {GRID_PROBLEMS}, got {name!r}.")


GRID_PROBLEMS = (
    "branin",
    "damavandi",
    "schaffer",
    "griewank3",
    "griewank4",
    "hartmann6",
    "svc_cancer",
)
