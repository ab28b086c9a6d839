r"""The loop's ``"bktf"`` strategy: BKTF on a grid of the space, and the best
unvisited grid point (Lei & Sun, 2023, Algorithm 2).

Each proposal maps the observations to their nearest grid points, runs the Gibbs
sampler afresh (seeded by the proposal's seed, so a resumed run continues exactly),
scores the whole grid with the acquisition in bounded-memory chunks
([`maximize_over_grid()`][treebo.bktf.acquisition.maximize_over_grid]) and returns
the best grid point that is neither evaluated nor pending. The loop's initial design
is moved onto the grid as well ([`snap()`][treebo.bktf.strategy.BKTFStrategy.snap]).

Spaces: `Real`, `Integer` and `Categorical` parameters; a choice that selects a
sub-tree is refused by name.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.exceptions import ModelFittingError
from torch import Tensor

from treebo.bktf.acquisition import SampleAcquisition, SampleUCB, maximize_over_grid
from treebo.bktf.conditionals import BKTFPrior
from treebo.bktf.grid import Grid
from treebo.bktf.model import BKTF
from treebo.space import ConfigurationError, TreeSpace
from treebo.strategies.base import Observations, Proposal, Strategy, register_strategy
from treebo.strategies.validation import check_count

#: The automatic resolution keeps the grid at most this large.
MAX_AUTO_GRID = 2**23


@dataclass(frozen=True)
class BKTFOptions:
    """Settings of the ``"bktf"`` strategy.

    Attributes:
        rank: $R$, the CP rank.
        resolution: Values per real parameter (and most per integer one);
            ``None`` picks the largest up to 50 that keeps the grid within
            ``MAX_AUTO_GRID`` points.
        num_sweeps: Gibbs sweeps per proposal (Lei & Sun (2023): 1000).
        burn_in: Sweeps discarded first (Lei & Sun (2023): 600).
        chains: Chains run as one batch (their kept samples are pooled).
        acquisition: How the samples score a grid point (default
            [`SampleUCB(beta=2)`][treebo.bktf.acquisition.SampleUCB]).
        prior: Hyper-priors.

    Example:
        >>> from treebo import TreeOptimizer
        >>> from treebo.space import Real, TreeSpace, Vertex
        >>> space = TreeSpace(Vertex([Real("x", 0, 1), Real("y", 0, 1)]))
        >>> strategy = BKTFStrategy(BKTFOptions(rank=3))
        >>> TreeOptimizer(space, strategy=strategy).strategy.name
        'bktf'
    """

    rank: int = 2
    resolution: int | None = None
    num_sweeps: int = 1000
    burn_in: int = 600
    chains: int = 1
    acquisition: SampleAcquisition = field(default_factory=SampleUCB)
    prior: BKTFPrior = field(default_factory=BKTFPrior)

    def __post_init__(self) -> None:
        check_count(self.rank, "rank", 1)
        if self.resolution is not None:
            check_count(self.resolution, "resolution", 2)
        check_count(self.num_sweeps, "num_sweeps", 1)
        check_count(self.burn_in, "burn_in", 0)
        check_count(self.chains, "chains", 1)
        if self.burn_in >= self.num_sweeps:
            raise ValueError(
                f"burn_in must be < num_sweeps, got burn_in={self.burn_in}, "
                f"num_sweeps={self.num_sweeps}."
            )
        if not isinstance(self.acquisition, SampleAcquisition):
            raise TypeError(
                "acquisition must be a SampleAcquisition (e.g. SampleUCB()), got "
                f"{type(self.acquisition).__name__}."
            )
        if not isinstance(self.prior, BKTFPrior):
            raise TypeError(
                f"prior must be a BKTFPrior, got {type(self.prior).__name__}."
            )


def auto_resolution(space: TreeSpace, max_points: int = MAX_AUTO_GRID) -> int:
    """The largest resolution up to 50 whose grid has at most ``max_points``
    points (at least 2)."""
    for resolution in range(50, 1, -1):
        if Grid.from_space(space, resolution).numel <= max_points:
            return resolution
    return 2


@register_strategy
class BKTFStrategy(Strategy):
    """BKTF and the best unvisited grid point (module docstring).

    Example:
        >>> from treebo import minimize
        >>> from treebo.space import Real, TreeSpace, Vertex
        >>> space = TreeSpace(Vertex([Real("x", -1, 1), Real("y", -1, 1)]))
        >>> few_sweeps = BKTFOptions(num_sweeps=30, burn_in=15)
        >>> result = minimize(lambda p: p["x"] ** 2 + p["y"] ** 2, space, budget=6,
        ...                   seed=0, strategy=BKTFStrategy(few_sweeps))
        >>> [t.kind for t in result.history].count("bo")
        1
    """

    handles_pending = True  # pending configurations are avoided

    name: ClassVar[str] = "bktf"
    options_type: ClassVar[type] = BKTFOptions

    def __init__(self, options: Any | None = None, **kwargs: Any) -> None:
        super().__init__(options, **kwargs)
        self._grid: tuple[TreeSpace, Grid] | None = None
        self.last_model: BKTF | None = None

    def validate_space(self, space: TreeSpace) -> None:
        if space.choice_columns:
            name = space.parameter_names[space.choice_columns[0]]
            raise ConfigurationError(
                f"strategy={self.name!r} takes spaces without conditional parameters; "
                f"{name!r} is a choice that selects a sub-tree."
            )

    def grid(self, space: TreeSpace) -> Grid:
        """The grid of ``space`` at the options' resolution (built once per
        space)."""
        if self._grid is None or self._grid[0] is not space:
            resolution = self.options.resolution or auto_resolution(space)
            self._grid = (space, Grid.from_space(space, resolution))
        return self._grid[1]

    def snap(self, space: TreeSpace, X: Tensor) -> Tensor:
        """``X`` (``n x d`` encodings) moved to the nearest grid points; a row
        that lands on a point taken by an earlier row moves on to a free grid
        point (a fixed hash of its index, probed in turn), so that the initial
        design repeats nothing while the grid has room."""
        grid = self.grid(space)
        flat = grid.flat(grid.indices(grid.snap(X))).tolist()
        taken: set[int] = set()
        for i, f in enumerate(flat):
            probe = 0
            while f in taken and probe < grid.numel:
                probe += 1
                f = (flat[i] * 2654435761 + probe) % grid.numel
            taken.add(f)
            flat[i] = f
        index = grid.unflatten(torch.tensor(flat, device=X.device))
        return grid.points(index).to(X)

    def options_dict(self) -> dict[str, Any]:
        out = asdict(self.options)
        out["acquisition"] = {
            "type": type(self.options.acquisition).__name__,
            **out["acquisition"],
        }
        return out

    def fit(self, observations: Observations) -> BKTF:
        """BKTF of the observations (their nearest grid points), sampled."""
        obs = observations
        grid = self.grid(obs.space)
        X = grid.snap(obs.X)
        opts = self.options
        try:
            model = BKTF(X, obs.y, grid, rank=opts.rank, prior=opts.prior)
            model.fit(
                num_sweeps=opts.num_sweeps,
                burn_in=opts.burn_in,
                chains=opts.chains,
                seed=obs.seed,
            )
        except (RuntimeError, ValueError) as err:
            raise ModelFittingError(f"could not fit strategy='bktf': {err}") from err
        self.last_model = model
        return model

    def propose(self, observations: Observations) -> Proposal:
        obs = observations
        t0 = time.perf_counter()
        model = self.fit(obs)
        t1 = time.perf_counter()
        grid = model.grid
        visited = torch.cat([obs.X, obs.X_pending.to(obs.X)])
        exclude = grid.flat(grid.indices(grid.snap(visited)))
        best = float(model.data.y.max())
        try:
            flat, _ = maximize_over_grid(
                model.samples, grid, self.options.acquisition, best, exclude
            )
        except ValueError as err:
            raise ModelFittingError(str(err)) from err
        index = grid.unflatten(torch.tensor(flat, device=exclude.device))
        timings = {"fit": t1 - t0, "optimize": time.perf_counter() - t1}
        return Proposal(grid.points(index).to(obs.X), "bo", timings)

    def acquisition(self, observations: Observations) -> AcquisitionFunction:
        """The acquisition at the nearest grid points of the candidates."""
        model = self.fit(observations)
        return GridPointAcquisition(
            model, self.options.acquisition, float(model.data.y.max())
        )


class GridPointAcquisition(AcquisitionFunction):
    """A [`SampleAcquisition`][treebo.bktf.acquisition.SampleAcquisition] as a
    BoTorch acquisition function of single points (``q = 1``), each scored at its
    nearest grid point.

    Args:
        model: A fitted [`BKTF`][treebo.bktf.model.BKTF].
        acquisition: How the samples become a score.
        best: The best observed value on the model's standardized scale.
    """

    def __init__(
        self, model: BKTF, acquisition: SampleAcquisition, best: float
    ) -> None:
        super().__init__(model)
        self.sample_acquisition = acquisition
        self.best = best

    def forward(self, X: Tensor) -> Tensor:
        """Scores (``batch``) of ``X`` (``batch x 1 x D``)."""
        if X.dim() < 2 or X.shape[-2] != 1:
            raise ValueError(f"X must be batch x 1 x D, got shape {tuple(X.shape)}.")
        model: BKTF = self.model
        samples = model.fitted_samples
        values = samples.values(model.grid.indices(model.grid.snap(X[..., 0, :])))
        flat = values.reshape(values.shape[0], -1)
        return self.sample_acquisition(flat, self.best).reshape(X.shape[:-2])
