r"""The tree-additive strategy: Tree-GP-UCB (Han, Arora & Scarlett, 2021, Alg. 1).

Each proposal builds a [`TreeAdditiveGP`][treebo.tree_additive.model.TreeAdditiveGP] on
the observations (inputs scaled to the unit cube) and maximizes the additive UCB with
$\beta_t = \tfrac12 \log(2t)$ by zooming message passing
([`optimize_acqf_zooming()`][treebo.tree_additive.zooming.optimize_acqf_zooming]). Every
``learn_interval`` proposals, counted from the first model-based one, the forest is
re-learned
([`learn_tree_structure()`][treebo.tree_additive.structure_learning.learn_tree_structure],
started from the current one, with the hyper-parameters held fixed, then refitted);
every ``refit_interval`` proposals the hyper-parameters are refitted, warm-started; in
between, the model is conditioned on the new data with the last hyper-parameters (one
Gram matrix, one Cholesky factor). A proposal that repeats an evaluated point is
replaced by the best zooming restart that does not. Pending configurations are believed
at the model's predicted values.

The forest and the hyper-parameters are the strategy's state; checkpoints
store them, so a resumed run continues exactly.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import torch
from botorch.exceptions import ModelFittingError
from torch import Tensor

from treebo.gp.fit import noise_floor_likelihood
from treebo.optim.pool import optimize_acqf_pool
from treebo.space import TreeSpace
from treebo.strategies.base import (
    REPEAT_TOL,
    Observations,
    Proposal,
    Strategy,
    is_observed,
    register_strategy,
    require_real_parameters,
)
from treebo.strategies.believer import believe_pending
from treebo.strategies.fitting import WarmStartFit
from treebo.strategies.validation import check_count, check_positive
from treebo.tree_additive.forest import check_forest
from treebo.tree_additive.model import TreeAdditiveGP
from treebo.tree_additive.structure_learning import learn_tree_structure
from treebo.tree_additive.ucb import TreeAdditiveUCB
from treebo.tree_additive.zooming import optimize_acqf_zooming

#: $\beta_t = \text{BETA_SCALE} \cdot \log(2t)$ (Han et al., 2021).
BETA_SCALE = 0.5
#: L-BFGS-B iterations of each hyper-parameter fit.
FIT_MAXITER = 100


@dataclass(frozen=True)
class TreeAdditiveOptions:
    r"""Settings of the ``"tree_additive"`` strategy (Han et al.'s (2021) defaults).

    Attributes:
        learn_interval: ``C``: proposals between structure learning steps,
            each with a (warm-started) hyper-parameter fit; in between, the
            model is conditioned on new data with the last hyper-parameters.
        structure_samples: Candidate structures scored per learning step.
        edge_prior: $\gamma$, prior probability of each edge.
        edges: A fixed forest ``[[u, v], ...]`` over the parameters (in the
            order of ``space.parameter_names``): the structure is not
            learned. ``None`` (default): learned by Gibbs sampling.
        grid_size: ``R``, cells per variable and zoom level.
        num_levels: ``L``, zoom levels.
        num_restarts: Independent zooming runs per proposal.
        noise_floor: Lower bound on the noise variance (standardized scores).

    Example:
        >>> from treebo import Real, TreeOptimizer, TreeSpace, Vertex
        >>> space = TreeSpace(Vertex([Real(f"x{i}", 0.0, 1.0) for i in range(3)]))
        >>> options = TreeAdditiveOptions(learn_interval=5)
        >>> TreeOptimizer(space, strategy=TreeAdditiveStrategy(options)).strategy.name
        'tree_additive'
    """

    learn_interval: int = 15
    structure_samples: int = 500
    edge_prior: float = 0.5
    edges: tuple[tuple[int, int], ...] | None = None
    grid_size: int = 4
    num_levels: int = 4
    num_restarts: int = 4
    noise_floor: float = 1e-4

    def __post_init__(self) -> None:
        check_count(self.learn_interval, "learn_interval", 1)
        check_count(self.structure_samples, "structure_samples", 1)
        if not (isinstance(self.edge_prior, float) and 0.0 < self.edge_prior < 1.0):
            raise ValueError(
                f"edge_prior must be a float in (0, 1), got {self.edge_prior!r}."
            )
        if self.edges is not None:
            edges = tuple(tuple(int(i) for i in e) for e in self.edges)
            if any(len(e) != 2 for e in edges):
                raise ValueError("edges must be pairs of variable indices.")
            object.__setattr__(self, "edges", edges)
        check_count(self.grid_size, "grid_size", 2)
        check_count(self.num_levels, "num_levels", 1)
        check_count(self.num_restarts, "num_restarts", 1)
        check_positive(self.noise_floor, "noise_floor")


@register_strategy
class TreeAdditiveStrategy(Strategy):
    """Tree-GP-UCB on a space of real parameters.

    Args:
        options:
            [`TreeAdditiveOptions`][treebo.tree_additive.strategy.TreeAdditiveOptions].
        **kwargs: ``device`` and ``dtype`` of the models.

    Attributes:
        edges: ``E x 2`` the current forest over the parameters (in the order
            of ``space.parameter_names``).
        last_model: The model of the last proposal.

    Example:
        >>> from treebo import Real, TreeSpace, Vertex, minimize
        >>> space = TreeSpace(Vertex([Real(f"x{i}", -1.0, 1.0) for i in range(4)]))
        >>> def f(p):
        ...     return sum((p[f"x{i}"] - 0.2) ** 2 for i in range(4))
        >>> result = minimize(f, space, budget=25, strategy="tree_additive", seed=0)
        >>> result.best_value < 0.5
        True
    """

    handles_pending = True  # pending configurations are avoided

    name = "tree_additive"
    options_type = TreeAdditiveOptions

    def __init__(
        self, options: TreeAdditiveOptions | None = None, **kwargs: Any
    ) -> None:
        super().__init__(options, **kwargs)
        self.fitter = WarmStartFit(
            optimizer_kwargs={"options": {"maxiter": FIT_MAXITER}}
        )
        initial = self.options.edges
        self.edges: Tensor | None = (
            None if initial is None else torch.tensor(initial).reshape(-1, 2)
        )
        self.last_model: TreeAdditiveGP | None = None

    def validate_space(self, space: TreeSpace) -> None:
        require_real_parameters(space, self.name)
        if self.edges is not None:
            check_forest(self.edges, space.dim)

    def _build(self, X: Tensor, y: Tensor, floor: float) -> TreeAdditiveGP:
        return TreeAdditiveGP(
            X, y, edges=self.edges, likelihood=noise_floor_likelihood(floor)
        ).to(X)

    def refit_due(self, step: int) -> bool:
        """Whether the ``step``-th proposal after the initial design refits
        the hyper-parameters between learning steps (never: Han et al. (2021) refits
        with each learning step; a subclass may refit more often)."""
        return False

    def _model(
        self, obs: Observations, X: Tensor, timings: dict[str, float]
    ) -> TreeAdditiveGP:
        """The model of this proposal: learned, refitted or only conditioned (its
        seconds of ``"fit"`` and ``"structure"`` go into ``timings``)."""
        opts = self.options
        step = obs.X.shape[0] - obs.n_initial
        learn = self.fitter.state is None or step % opts.learn_interval == 0
        refit = learn or self.refit_due(step)
        timings.update(fit=0.0, structure=0.0)
        t0 = time.perf_counter()
        if not refit:  # condition on the new data, hyper-parameters kept
            model = self._build(X, obs.y, opts.noise_floor)
            model.load_state_dict(self.fitter.state, strict=False)
            timings["fit"] = time.perf_counter() - t0
            return model.eval()

        def build(floor: float) -> TreeAdditiveGP:
            return self._build(X, obs.y, floor)

        model = self.fitter.fit(build, opts.noise_floor)
        timings["fit"] = time.perf_counter() - t0
        if learn and opts.edges is None:
            t1 = time.perf_counter()
            edges = learn_tree_structure(
                model,
                num_samples=opts.structure_samples,
                gamma=opts.edge_prior,
                seed=obs.seed,
            )
            changed = self.edges is None or not torch.equal(edges, self.edges)
            self.edges = edges
            t2 = time.perf_counter()
            timings["structure"] = t2 - t1
            if changed:  # refit under the new forest
                model = self.fitter.fit(build, opts.noise_floor)
                timings["fit"] += time.perf_counter() - t2
        return model

    def unit_acquisition(
        self, obs: Observations, timings: dict[str, float] | None = None
    ) -> TreeAdditiveUCB:
        """The additive UCB of the model fitted to ``obs``, pending
        configurations believed, on inputs scaled to the unit cube (the fit's
        seconds go into ``timings``)."""
        bounds = obs.space.bounds.to(obs.X)
        low, width = bounds[0], bounds[1] - bounds[0]
        X = (obs.X - low) / width
        model = self._model(obs, X, {} if timings is None else timings)
        if not all(bool(p.isfinite().all()) for p in model.parameters()):
            raise ModelFittingError("the tree-additive GP has non-finite parameters")
        if obs.X_pending.shape[0]:
            pending = (obs.X_pending.to(X) - low) / width
            model, _, _ = believe_pending(model, X, obs.y, pending, self._build)
        self.last_model = model
        beta = BETA_SCALE * math.log(2 * obs.X.shape[0])
        return TreeAdditiveUCB(model, beta=beta)

    def propose_from(self, observations: Observations, candidates: Tensor) -> Proposal:
        """The candidate of highest additive UCB."""
        bounds = observations.space.bounds.to(candidates)
        unit = (candidates - bounds[0]) / (bounds[1] - bounds[0])
        index, _ = optimize_acqf_pool(self.unit_acquisition(observations), unit)
        return Proposal(candidates[index], "bo")

    def propose(self, observations: Observations) -> Proposal:
        obs = observations
        bounds = obs.space.bounds.to(obs.X)
        low, width = bounds[0], bounds[1] - bounds[0]
        timings: dict[str, float] = {}
        acqf = self.unit_acquisition(obs, timings)
        t0 = time.perf_counter()
        unit = torch.stack([torch.zeros_like(low), torch.ones_like(low)])
        points, _ = optimize_acqf_zooming(
            acqf,
            unit,
            grid_size=self.options.grid_size,
            num_levels=self.options.num_levels,
            num_restarts=self.options.num_restarts,
            seed=obs.seed,
            return_restarts=True,
        )
        candidates = low + width * points
        # The best restart that does not repeat an evaluated point.
        fresh = [
            c for c in candidates if not is_observed(obs.space, c, obs.X, REPEAT_TOL)
        ]
        timings["optimize"] = time.perf_counter() - t0
        return Proposal((fresh[0] if fresh else candidates[0]).detach(), "bo", timings)

    def state_dict(self) -> dict[str, Any]:
        return {
            "edges": None if self.edges is None else self.edges.tolist(),
            "hyperparameters": self.fitter.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        edges = state.get("edges")
        self.edges = None if edges is None else torch.tensor(edges).reshape(-1, 2)
        self.fitter.load_state_dict(state.get("hyperparameters", {}))
