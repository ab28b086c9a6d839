"""The global search of the Add-Tree strategies: an acquisition and its maximizer.

A search part turns the global model into a proposal over the whole space:
[`LogEISearch`][treebo.add_tree.global_search.LogEISearch] (``"add_tree"``) maximizes
``LogExpectedImprovement`` over every path at once;
[`VertexUCBSearch`][treebo.add_tree.global_search.VertexUCBSearch]
(``"add_tree_ucb"``) combines per-vertex UCB optima along paths (Algorithm 2 of Ma &
Blaschko, 2020) and moves proposals off a resolved basin.
"""

from __future__ import annotations

from botorch.acquisition import AcquisitionFunction, LogExpectedImprovement
from torch import Tensor

from treebo.add_tree.acquisition import AddTreeUCB, optimize_add_tree_ucb
from treebo.add_tree.local_steps import Failures, basin_resolved
from treebo.add_tree.model import AddTreeGP
from treebo.add_tree.options import AddTreeOptions, AddTreeUCBOptions
from treebo.optim.mixed import lists_paths, optimize_acqf_mixed_tree
from treebo.optim.tree_optimize import TreeCandidate, optimize_acqf_tree
from treebo.strategies.base import Observations


class LogEISearch:
    """LogEI over the best score, maximized over every path.

    Args:
        num_restarts: Optimizer starts (half of them per path where paths are
            listed).
        raw_samples: Random points scored to choose the starts.

    Example:
        >>> search = LogEISearch.from_options(AddTreeOptions())
        >>> search.num_restarts, search.redirect(Failures(0, 3, 3))
        (10, False)
    """

    def __init__(self, num_restarts: int = 10, raw_samples: int = 512) -> None:
        self.num_restarts = num_restarts
        self.raw_samples = raw_samples

    @classmethod
    def from_options(cls, options: AddTreeOptions) -> LogEISearch:
        """The search of ``options``' restarts and raw samples."""
        return cls(options.num_restarts, options.raw_samples)

    def acquisition(self, model: AddTreeGP, y: Tensor) -> AcquisitionFunction:
        """LogEI of ``model`` over the best of its scores ``y`` (``n x 1``)."""
        return LogExpectedImprovement(model, best_f=y.max())

    def propose(
        self, model: AddTreeGP, observations: Observations, y: Tensor, around: Tensor
    ) -> TreeCandidate:
        """The maximizer of
        [`acquisition()`][treebo.add_tree.global_search.LogEISearch.acquisition]
        (see [`maximize()`][treebo.add_tree.global_search.LogEISearch.maximize])."""
        return self.maximize(self.acquisition(model, y), observations, around)

    def maximize(
        self, acqf: AcquisitionFunction, observations: Observations, around: Tensor
    ) -> TreeCandidate:
        """Maximize ``acqf`` over every path (``num_restarts // 2`` starts each)
        where the space has few paths and only real parameters, else by alternating
        continuous and discrete steps
        ([`optimize_acqf_mixed_tree()`][treebo.optim.mixed.optimize_acqf_mixed_tree]);
        ``around``: ``k x d`` configurations some starts are drawn near."""
        space = observations.space
        if not lists_paths(space):
            return self.maximize_mixed(acqf, observations, around)
        return optimize_acqf_tree(
            acqf,
            space,
            num_restarts=max(1, self.num_restarts // 2),
            raw_samples=max(self.raw_samples // 4, self.num_restarts),
            seed=observations.seed,
            around=around,
        )

    def maximize_mixed(
        self, acqf: AcquisitionFunction, observations: Observations, around: Tensor
    ) -> TreeCandidate:
        """Maximize ``acqf`` by alternating continuous and discrete steps."""
        return optimize_acqf_mixed_tree(
            acqf,
            observations.space,
            num_restarts=self.num_restarts,
            raw_samples=self.raw_samples,
            seed=observations.seed,
            around=around,
        )

    def redirect(self, failures: Failures) -> bool:
        """Whether a global proposal near the incumbent should go elsewhere: never
        for LogEI, which leaves a resolved basin by itself."""
        del failures
        return False


class VertexUCBSearch(LogEISearch):
    r"""Add-Tree-GP-UCB: per-vertex UCB optima combined along paths.

    Args:
        num_restarts: Optimizer starts per vertex.
        raw_samples: Random points scored to choose the starts.
        beta: UCB weight(s); ``None`` gives the paper's $0.2\,d_v \log(2t)$.
        path_selection: ``"joint"`` or ``"sum"``
            ([`AddTreeUCBOptions`][treebo.add_tree.options.AddTreeUCBOptions]).
        basin_patience: Failed local steps in a row after which a proposal near
            the incumbent moves elsewhere (``None``: never).

    Example:
        >>> search = VertexUCBSearch.from_options(AddTreeUCBOptions())
        >>> search.redirect(Failures(0, 3, 3)), search.redirect(Failures(0, 2, 2))
        (True, False)
    """

    def __init__(
        self,
        num_restarts: int = 10,
        raw_samples: int = 512,
        beta: float | None = None,
        path_selection: str = "joint",
        basin_patience: int | None = 3,
    ) -> None:
        super().__init__(num_restarts, raw_samples)
        self.beta = beta
        self.path_selection = path_selection
        self.basin_patience = basin_patience

    @classmethod
    def from_options(cls, options: AddTreeUCBOptions) -> VertexUCBSearch:
        """The search of ``options``."""
        return cls(
            options.num_restarts,
            options.raw_samples,
            options.beta,
            options.path_selection,
            options.basin_patience,
        )

    def acquisition(self, model: AddTreeGP, y: Tensor) -> AcquisitionFunction:
        """The sum of the vertex UCBs along a point's path."""
        del y
        return AddTreeUCB(model, beta=self.beta, maximize=True)

    def propose(
        self, model: AddTreeGP, observations: Observations, y: Tensor, around: Tensor
    ) -> TreeCandidate:
        """Per-vertex UCB optima, combined by ``path_selection`` (over the best paths
        found by dynamic programming where there are many); on spaces with integer
        or categorical parameters, the sum of the vertex UCBs along a point's path,
        maximized by alternating continuous and discrete steps."""
        acqf = self.acquisition(model, y)
        space = observations.space
        if space.integer_columns or space.categorical_columns:
            return self.maximize_mixed(acqf, observations, around)
        return optimize_add_tree_ucb(
            acqf,
            space,
            num_restarts=self.num_restarts,
            raw_samples=self.raw_samples,
            seed=observations.seed,
            around=around,
            path_selection=self.path_selection,
        )

    def redirect(self, failures: Failures) -> bool:
        """Whether ``basin_patience`` local steps in a row have failed."""
        return basin_resolved(failures, self.basin_patience)
