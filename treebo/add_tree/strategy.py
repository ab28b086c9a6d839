r"""The Add-Tree strategies: BO on tree-structured spaces with an ``AddTreeGP``.

A proposal fits an [`AddTreeGP`][treebo.add_tree.model.AddTreeGP] (warm-started, see
[`WarmStartFit`][treebo.strategies.fitting.WarmStartFit]), believes the pending
configurations at its predicted values
([`believe_pending()`][treebo.strategies.believer.believe_pending]), maximizes an
acquisition over every path at once, and then applies three rules:

1. A proposal on the incumbent's path within the local radius becomes a local
   step ([`LocalSteps`][treebo.add_tree.local_steps.LocalSteps]): the global model
   cannot resolve differences below its noise floor, the local model can.
2. A global proposal that repeats an evaluated point (to ``1e-4`` of each
   range) is replaced by the best path candidate not yet evaluated.
3. Add-Tree-GP-UCB only: once local steps stop improving
   ([`basin_resolved()`][treebo.add_tree.basins.basin_resolved]), a global proposal near
   the incumbent is moved to the best candidate elsewhere (kind ``"away"``).

``"add_tree"`` ([`AddTreeStrategy`][treebo.add_tree.strategy.AddTreeStrategy]) maximizes
``LogExpectedImprovement``; ``"add_tree_ucb"``
([`AddTreeUCBStrategy`][treebo.add_tree.strategy.AddTreeUCBStrategy]) is Algorithm 2 of
Ma & Blaschko (2020).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from botorch.acquisition import AcquisitionFunction, LogExpectedImprovement
from botorch.exceptions import ModelFittingError
from torch import Tensor

from treebo.add_tree.basins import Failures, basin_resolved, count_failures
from treebo.add_tree.features import interacting_vertices
from treebo.add_tree.kernel_options import AddTreeKernelOptions
from treebo.add_tree.local_steps import LocalSteps
from treebo.add_tree.model import AddTreeGP
from treebo.add_tree.optimize import optimize_add_tree_ucb
from treebo.add_tree.options import AddTreeOptions, AddTreeUCBOptions
from treebo.add_tree.ucb import AddTreeUCB
from treebo.gp.fit import (
    loo_log_densities,
    noise_floor_likelihood,
    predicts_better,
)
from treebo.optim.mixed import lists_paths, optimize_acqf_mixed_tree
from treebo.optim.tree_optimize import TreeCandidate, optimize_acqf_tree
from treebo.space import TreeSpace
from treebo.strategies.base import (
    REPEAT_TOL,
    Observations,
    Proposal,
    Strategy,
    is_observed,
    register_strategy,
)
from treebo.strategies.believer import believe_pending
from treebo.strategies.fitting import WarmStartFit


@register_strategy
class AddTreeStrategy(Strategy):
    """LogEI on an [`AddTreeGP`][treebo.add_tree.model.AddTreeGP], with local
    refinement.

    Args:
        options: [`AddTreeOptions`][treebo.add_tree.options.AddTreeOptions].
        **kwargs: ``device`` and ``dtype`` of the models (default CPU,
            float64).

    Attributes:
        last_model: The global model of the last proposal.
        timings: Seconds spent in the last proposal's ``"fit"`` (global
            model, believer included) and ``"optimize"`` (acquisition
            optimization and local step).

    Example:
        >>> from treebo import TreeOptimizer
        >>> from treebo.test_functions import Jenatton
        >>> strategy = AddTreeStrategy(AddTreeOptions(noise_floor=1e-4))
        >>> TreeOptimizer(Jenatton().space, model=strategy).strategy.name
        'add_tree'
    """

    name = "add_tree"
    options_type = AddTreeOptions

    def __init__(self, options: AddTreeOptions | None = None, **kwargs: Any) -> None:
        super().__init__(options, **kwargs)
        opts = self.options
        self.fitter = self.make_fitter()
        self.alternative_fitters = [self.make_fitter() for _ in opts.alternatives()]
        self.kernel_options = opts.kernel  # of the model in use
        self.local = self.make_local_steps()
        self.last_model: AddTreeGP | None = None
        self.timings: dict[str, float] = {}

    # ----------------------------------------------------------------- model
    def make_local_steps(self) -> LocalSteps | None:
        """The local refinement of ``options.local`` (``None``: none; a
        subclass may return a [`LocalSteps`][treebo.add_tree.local_steps.LocalSteps]
        subclass with other step
        settings)."""
        local = self.options.local
        return None if local is None else LocalSteps(local)

    def make_fitter(self) -> WarmStartFit:
        """The fitter of a model: marginal likelihood, warm-started from its
        last fit (a subclass may fit otherwise, e.g.
        ``WarmStartFit(criterion="loo")``)."""
        return WarmStartFit()

    def build_model(
        self,
        space: TreeSpace,
        X: Tensor,
        y: Tensor,
        noise_floor: float,
        kernel: AddTreeKernelOptions | None = None,
    ) -> AddTreeGP:
        """An unfitted [`AddTreeGP`][treebo.add_tree.model.AddTreeGP] on ``X``, ``y``
        with the kernel
        settings ``kernel`` (default: those of the model in use)."""
        kernel = self.kernel_options if kernel is None else kernel
        return AddTreeGP(
            X,
            y,
            space.tree,
            bounds=space.bounds.to(X),
            categorical_values=space.categorical_values,
            likelihood=noise_floor_likelihood(noise_floor),
            **kernel.as_kwargs(),
        ).to(X)

    def fit(self, observations: Observations) -> AddTreeGP:
        """Fit the global model to the finished evaluations: the model of
        ``options.kernel``, or of an alternative kernel that predicts the data clearly
        better in leave-one-out (by more than one standard error of the paired per-point
        gains:
        [`predicts_better()`][treebo.gp.fit.predicts_better])."""
        space, X, y = observations.space, observations.X, observations.y
        floor, main = self.options.noise_floor, self.options.kernel
        model = self.fitter.fit(lambda f: self.build_model(space, X, y, f, main), floor)
        chosen = main
        alternatives = [
            (kernel, fitter)
            for kernel, fitter in zip(
                self.options.alternatives(), self.alternative_fitters, strict=True
            )
            if distinct_kernel(kernel, main, space)
        ]
        try:
            best = loo_log_densities(model) if alternatives else None
        except RuntimeError:  # nothing to compare against: keep the main model
            best = None
        if best is not None:
            for kernel, fitter in alternatives:
                try:
                    other = fitter.fit(
                        lambda f, k=kernel: self.build_model(space, X, y, f, k), floor
                    )
                    densities = loo_log_densities(other)
                except (ModelFittingError, RuntimeError):  # keep what fitted
                    continue
                if predicts_better(densities, best):
                    model, chosen, best = other, kernel, densities
        self.kernel_options = chosen
        self.last_model = model
        return model

    def state_dict(self) -> dict[str, Any]:
        state = {"hyperparameters": self.fitter.state_dict()}
        if self.alternative_fitters:
            state["alternatives"] = [f.state_dict() for f in self.alternative_fitters]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.fitter.load_state_dict(state.get("hyperparameters", {}))
        saved = state.get("alternatives", [{}] * len(self.alternative_fitters))
        for fitter, entry in zip(self.alternative_fitters, saved, strict=True):
            fitter.load_state_dict(entry)

    # -------------------------------------------------------------- proposal
    def propose(self, observations: Observations) -> Proposal:
        t0 = time.perf_counter()
        obs = observations
        space, X, y = obs.space, obs.X, obs.y
        incumbent = obs.incumbent
        failures = count_failures(obs.scores, obs.kinds)
        model = None
        if obs.X_pending.shape[0]:
            model, X, y = believe_pending(
                self.fit(obs),
                X,
                y,
                obs.X_pending,
                lambda Xa, ya, floor: self.build_model(space, Xa, ya, floor),
            )
        local = self.local
        if local is not None and local.is_due(failures):
            if local.options.mean != "constant" and model is None:
                model = self.fit(obs)
            t1 = time.perf_counter()
            step = local.candidate(obs, obs.X, obs.y, model, obs.X_pending)
            if step is not None:
                self.timings = {"fit": t1 - t0, "optimize": time.perf_counter() - t1}
                return Proposal(step[0], "local")
        if model is None:
            model = self.fit(obs)
        t1 = time.perf_counter()
        # Start some optimizer runs near the best observations.
        around = X[y.squeeze(-1).topk(min(3, y.shape[0])).indices]
        cand = self.optimize_acquisition(model, obs, y, around)
        candidate, kind = cand.candidate[0], "bo"
        near = local is not None and local.is_near(space, candidate, incumbent)
        if near and self.redirect(failures):
            # The incumbent's basin is resolved: go to the best other basin.
            other = best_path_candidate(
                cand, lambda row: not local.is_near(space, row, incumbent)
            )
            if other is not None:
                self.timings = {"fit": t1 - t0, "optimize": time.perf_counter() - t1}
                return Proposal(other, "away")
        if near:
            step = local.candidate(obs, obs.X, obs.y, model, obs.X_pending)
            if step is not None:
                candidate, kind = step[0], "local"
        if kind == "bo" and is_observed(space, candidate, X, REPEAT_TOL):
            # Re-evaluating a point (or one next to it) teaches the global model
            # of a deterministic objective nothing; Add-Tree-GP-UCB asks for
            # such points because its per-vertex variances do not shrink where
            # components are confounded. Take the best new path candidate.
            other = best_path_candidate(
                cand, lambda row: not is_observed(space, row, X, REPEAT_TOL)
            )
            if other is not None:
                candidate = other
        self.timings = {"fit": t1 - t0, "optimize": time.perf_counter() - t1}
        return Proposal(candidate, kind)

    def acquisition_of(self, model: AddTreeGP, y: Tensor) -> AcquisitionFunction:
        """The acquisition function of ``model`` fitted to scores ``y``:
        LogEI over the best score."""
        return LogExpectedImprovement(model, best_f=y.max())

    def acquisition(self, observations: Observations) -> AcquisitionFunction:
        """The acquisition function on the global model, with pending
        configurations believed at its prediction (what a pool is scored
        with; local steps apply to continuous spaces only)."""
        obs = observations
        model, y = self.fit(obs), obs.y
        if obs.X_pending.shape[0]:
            model, _, y = believe_pending(
                model,
                obs.X,
                y,
                obs.X_pending,
                lambda Xa, ya, floor: self.build_model(obs.space, Xa, ya, floor),
            )
        return self.acquisition_of(model, y)

    def optimize_acquisition(
        self, model: AddTreeGP, observations: Observations, y: Tensor, around: Tensor
    ) -> TreeCandidate:
        """Maximize LogEI: over every path (``num_restarts // 2`` starts each)
        where the space has few paths and only real parameters, else by
        alternating continuous and discrete steps."""
        acqf = self.acquisition_of(model, y)
        opts = self.options
        if not lists_paths(observations.space):
            return self.optimize_mixed(acqf, observations, around)
        return optimize_acqf_tree(
            acqf,
            observations.space,
            num_restarts=max(1, opts.num_restarts // 2),
            raw_samples=max(opts.raw_samples // 4, opts.num_restarts),
            seed=observations.seed,
            around=around,
        )

    def optimize_mixed(
        self,
        acqf: AcquisitionFunction,
        observations: Observations,
        around: Tensor,
    ) -> TreeCandidate:
        """Maximize ``acqf`` by alternating continuous and discrete steps
        ([`optimize_acqf_mixed_tree()`][treebo.optim.mixed.optimize_acqf_mixed_tree])."""
        return optimize_acqf_mixed_tree(
            acqf,
            observations.space,
            num_restarts=self.options.num_restarts,
            raw_samples=self.options.raw_samples,
            seed=observations.seed,
            around=around,
        )

    def redirect(self, failures: Failures) -> bool:
        """Whether a global proposal near the incumbent should go elsewhere
        (never for LogEI, which leaves a resolved basin by itself)."""
        return False


@register_strategy
class AddTreeUCBStrategy(AddTreeStrategy):
    """Add-Tree-GP-UCB (Algorithm 2 of Ma & Blaschko, 2020) with local steps.

    Args:
        options: [`AddTreeUCBOptions`][treebo.add_tree.options.AddTreeUCBOptions].
        **kwargs: ``device`` and ``dtype`` of the models (default CPU,
            float64).

    Example:
        >>> from treebo import TreeOptimizer
        >>> from treebo.test_functions import Jenatton
        >>> opt = TreeOptimizer(Jenatton().space, model="add_tree_ucb")
        >>> type(opt.strategy).__name__, opt.strategy.options.path_selection
        ('AddTreeUCBStrategy', 'joint')
    """

    name = "add_tree_ucb"
    options_type = AddTreeUCBOptions

    def acquisition_of(self, model: AddTreeGP, y: Tensor) -> AcquisitionFunction:
        """The sum of the vertex UCBs along a point's path."""
        return AddTreeUCB(model, beta=self.options.beta, maximize=True)

    def optimize_acquisition(
        self, model: AddTreeGP, observations: Observations, y: Tensor, around: Tensor
    ) -> TreeCandidate:
        """Per-vertex UCB optima, combined by ``options.path_selection`` (over
        the best paths found by dynamic programming where there are many);
        on spaces with integer or categorical parameters, the sum of the
        vertex UCBs along a point's path, maximized by alternating continuous
        and discrete steps."""
        opts = self.options
        acqf = self.acquisition_of(model, y)
        space = observations.space
        if space.integer_columns or space.categorical_columns:
            return self.optimize_mixed(acqf, observations, around)
        return optimize_add_tree_ucb(
            acqf,
            observations.space,
            num_restarts=opts.num_restarts,
            raw_samples=opts.raw_samples,
            seed=observations.seed,
            around=around,
            path_selection=opts.path_selection,
        )

    def redirect(self, failures: Failures) -> bool:
        return basin_resolved(failures, self.options.basin_patience)


def best_path_candidate(
    cand: TreeCandidate, accept: Callable[[Tensor], bool]
) -> Tensor | None:
    """The per-path candidate with the highest acquisition value that
    ``accept`` admits (``None`` if there is none)."""
    if cand.path_candidates is None:
        return None
    order = cand.path_values.argsort(descending=True)
    for row in cand.path_candidates[order]:
        if accept(row):
            return row
    return None


def distinct_kernel(
    kernel: AddTreeKernelOptions, main: AddTreeKernelOptions, space: TreeSpace
) -> bool:
    """Whether ``kernel`` gives ``space`` a different model than ``main``
    (interaction terms change nothing where no vertex with parameters lies
    below another)."""
    if kernel.ancestor_interactions and not bool(
        interacting_vertices(space.tree).any()
    ):
        kernel = replace(kernel, ancestor_interactions=False)
    return kernel != main
