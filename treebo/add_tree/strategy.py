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
   ([`basin_resolved()`][treebo.add_tree.local_steps.basin_resolved]), a global
   proposal near the incumbent is moved to the best candidate elsewhere (kind
   ``"away"``).

``"add_tree"`` ([`AddTreeStrategy`][treebo.add_tree.strategy.AddTreeStrategy]) maximizes
``LogExpectedImprovement``; ``"add_tree_ucb"``
([`AddTreeUCBStrategy`][treebo.add_tree.strategy.AddTreeUCBStrategy]) is Algorithm 2 of
Ma & Blaschko (2020).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction, LogExpectedImprovement
from botorch.acquisition.analytic import PosteriorStandardDeviation
from botorch.exceptions import ModelFittingError
from torch import Tensor

from treebo.add_tree.acquisition import AddTreeUCB, optimize_add_tree_ucb
from treebo.add_tree.local_steps import (
    Failures,
    LocalSteps,
    basin_resolved,
    count_failures,
)
from treebo.add_tree.model import AddTreeGP
from treebo.add_tree.options import (
    AddTreeKernelOptions,
    AddTreeOptions,
    AddTreeUCBOptions,
    distinct_kernel,
)
from treebo.gp.fit import (
    loo_log_densities,
    noise_floor_likelihood,
    predicts_better,
)
from treebo.gp.noise import (
    DETERMINISTIC_NOISE_FLOOR,
    INFERRED_NOISE_FLOOR,
    inferred_noise_likelihood,
)
from treebo.optim.mixed import lists_paths, optimize_acqf_mixed_tree
from treebo.optim.pool import optimize_acqf_pool
from treebo.optim.tree_optimize import TreeCandidate, optimize_acqf_tree
from treebo.space import TreeSpace
from treebo.strategies.base import (
    REPEAT_TOL,
    Observations,
    Prediction,
    Proposal,
    Strategy,
    is_observed,
    register_strategy,
)
from treebo.strategies.believer import believe_pending
from treebo.strategies.far_out import screen_far_out
from treebo.strategies.fitting import WarmStartFit
from treebo.strategies.ties import ties_the_best


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
        >>> TreeOptimizer(Jenatton().space, strategy=strategy).strategy.name
        'add_tree'
    """

    handles_pending = True  # pending configurations are avoided

    name = "add_tree"
    options_type = AddTreeOptions
    known_noise = True

    #: Local steps run where the objective is deterministic, declared or inferred:
    #: a fitted noise variance within this factor of its floor.
    LOCAL_NOISE_FACTOR = 10.0

    def __init__(self, options: AddTreeOptions | None = None, **kwargs: Any) -> None:
        super().__init__(options, **kwargs)
        opts = self.options
        self.fitter = self.make_fitter()
        self.alternative_fitters = [self.make_fitter() for _ in opts.alternatives()]
        self.kernel_options = opts.kernel  # of the model in use
        self.local = self.make_local_steps()
        self.last_model: AddTreeGP | None = None
        # The noise declaration of the observations being modelled.
        self.noise = "infer"
        self.yvar: Tensor | None = None

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
        ``WarmStartFit(mll_class=LeaveOneOutPseudoLikelihood)``)."""
        return WarmStartFit()

    def noise_floor(self) -> float:
        """The global model's noise floor: ``options.noise_floor``, or by the run's
        ``noise`` (``1e-4`` where inferred, ``1e-6`` where deterministic or
        known)."""
        if self.options.noise_floor is not None:
            return self.options.noise_floor
        if self.noise == "infer":
            return INFERRED_NOISE_FLOOR
        return DETERMINISTIC_NOISE_FLOOR

    def build_model(
        self,
        space: TreeSpace,
        X: Tensor,
        y: Tensor,
        noise_floor: float,
        kernel: AddTreeKernelOptions | None = None,
    ) -> AddTreeGP:
        """An unfitted [`AddTreeGP`][treebo.add_tree.model.AddTreeGP] on ``X``, ``y``
        with the kernel settings ``kernel`` (default: those of the model in use).

        Its likelihood follows the run's ``noise``: the noise is inferred above
        ``noise_floor``
        ([`inferred_noise_likelihood()`][treebo.gp.noise.inferred_noise_likelihood]),
        held near ``noise_floor`` for a deterministic objective
        ([`noise_floor_likelihood()`][treebo.gp.fit.noise_floor_likelihood]), or
        fixed at the known variances (``train_Yvar``, at least ``noise_floor``; rows
        beyond them, believed pending points, at ``noise_floor``).
        """
        kernel = self.kernel_options if kernel is None else kernel
        likelihood, yvar = None, None
        if self.noise == "infer":
            likelihood = inferred_noise_likelihood(noise_floor)
        elif self.noise == "deterministic" or self.yvar is None:
            likelihood = noise_floor_likelihood(noise_floor)
        else:
            yvar = y.new_full(y.shape, noise_floor)
            known = self.yvar.to(y)[: y.shape[0]]
            yvar[: known.shape[0]] = known.clamp_min(noise_floor)
        return AddTreeGP(
            X,
            y,
            space.tree,
            train_Yvar=yvar,
            bounds=space.bounds.to(X),
            categorical_values=space.categorical_values,
            likelihood=likelihood,
            **kernel.as_kwargs(),
        ).to(X)

    def fit(self, observations: Observations) -> AddTreeGP:
        """Fit the global model to the finished evaluations: the model of
        ``options.kernel``, or of an alternative kernel that predicts the data clearly
        better in leave-one-out (by more than one standard error of the paired per-point
        gains:
        [`predicts_better()`][treebo.gp.fit.predicts_better]). Each fit starts from the
        previous one of its kernel; an alternative's first, from the main model's
        (the alternatives add terms to it: the same optimum in a third to a half of the
        evaluations, measured at 15 to 1000 points)."""
        space, X, y = observations.space, observations.X, observations.y
        self.noise, self.yvar = observations.noise, observations.yvar
        floor, main = self.noise_floor(), self.options.kernel
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
                if fitter.state is None and self.fitter.state is not None:
                    # The alternative nests the main model (its terms plus
                    # interactions): its first fit starts from the main fit.
                    fitter.state = dict(self.fitter.state)
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

    def screen(
        self, observations: Observations
    ) -> tuple[Observations, AddTreeGP | None]:
        """The observations to propose from and the model fitted to them, if any:
        far-out scores leave the model where the evidence calls them outliers
        ([`screen_far_out()`][treebo.strategies.far_out.screen_far_out])."""
        return screen_far_out(observations, self)

    def predict(self, observations: Observations) -> Prediction | None:
        """The posterior of a model fitted to ``observations`` at their
        configurations, or ``None`` where the model interpolates (a deterministic
        objective, declared or inferred as for local steps: the best observation is
        then the best guess). The fit runs on a copy of the strategy, so later
        proposals stay as they would have been."""
        if observations.noise == "deterministic":
            return None
        copied = self.scratch_copy()
        model = copied.fit(observations)
        if copied.resolves_locally(model):
            return None
        with torch.no_grad():
            posterior = model.posterior(observations.X)
        return Prediction(
            posterior.mean.squeeze(-1), posterior.variance.squeeze(-1).clamp_min(0.0)
        )

    def resolves_locally(self, model: AddTreeGP | None) -> bool:
        """Whether local steps apply: the objective is deterministic, declared so or
        inferred (``model``'s fitted noise within ``LOCAL_NOISE_FACTOR`` of its
        floor); never with known noise."""
        if self.noise == "deterministic":
            return True
        if self.noise != "infer" or model is None:
            return False
        noise = float(model.likelihood.noise.detach().max())
        return noise <= self.LOCAL_NOISE_FACTOR * self.noise_floor()

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
        obs, model = self.screen(observations)
        space, X, y = obs.space, obs.X, obs.y
        incumbent = obs.incumbent
        failures = count_failures(obs.scores, obs.kinds)
        self.noise, self.yvar = obs.noise, obs.yvar
        if obs.X_pending.shape[0]:
            model, X, y = believe_pending(
                self.fit(obs) if model is None else model,
                X,
                y,
                obs.X_pending,
                lambda Xa, ya, floor: self.build_model(space, Xa, ya, floor),
            )
        if self.after_tie(obs):
            model = self.fit(obs) if model is None else model
            t1 = time.perf_counter()
            around = X[y.squeeze(-1).topk(min(3, y.shape[0])).indices]
            acqf = PosteriorStandardDeviation(model)
            cand = self.maximize(acqf, obs, around).candidate[0]
            self.timings = {"fit": t1 - t0, "optimize": time.perf_counter() - t1}
            return Proposal(cand, "explore")
        local = self.local
        if local is not None and local.is_due(failures):
            # The global model decides whether local steps apply where the noise
            # is inferred, and is the local model's mean unless that is constant.
            if model is None and (
                local.options.mean != "constant" or self.noise == "infer"
            ):
                model = self.fit(obs)
            if self.resolves_locally(model):
                t1 = time.perf_counter()
                step = local.candidate(obs, obs.X, obs.y, model, obs.X_pending)
                if step is not None:
                    self.timings = {
                        "fit": t1 - t0,
                        "optimize": time.perf_counter() - t1,
                    }
                    return Proposal(step[0], "local")
        if model is None:
            model = self.fit(obs)
        if local is not None and not self.resolves_locally(model):
            local = None
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

    def after_tie(self, observations: Observations) -> bool:
        """Whether the next proposal explores: the last evaluation tied the best
        score exactly ([`treebo.strategies.ties`][treebo.strategies.ties])."""
        return ties_the_best(observations.y, observations.failed)

    def propose_from(self, observations: Observations, candidates: Tensor) -> Proposal:
        """The pool row of highest
        [`acquisition()`][treebo.add_tree.strategy.AddTreeStrategy.acquisition]
        value (kind ``"explore"`` after a tie with the best score)."""
        index, _ = optimize_acqf_pool(self.acquisition(observations), candidates)
        kind = "explore" if self.after_tie(observations) else "bo"
        return Proposal(candidates[index], kind)

    def acquisition_of(self, model: AddTreeGP, y: Tensor) -> AcquisitionFunction:
        """The acquisition function of ``model`` fitted to scores ``y``:
        LogEI over the best score."""
        return LogExpectedImprovement(model, best_f=y.max())

    def acquisition(self, observations: Observations) -> AcquisitionFunction:
        """The acquisition function on the global model, with pending
        configurations believed at its prediction (what a pool is scored
        with; local steps apply to continuous spaces only): the posterior standard
        deviation after a tie with the best score, else that of
        [`acquisition_of()`][treebo.add_tree.strategy.AddTreeStrategy.acquisition_of]."""
        obs, model = self.screen(observations)
        model, y = self.fit(obs) if model is None else model, obs.y
        if obs.X_pending.shape[0]:
            model, _, y = believe_pending(
                model,
                obs.X,
                y,
                obs.X_pending,
                lambda Xa, ya, floor: self.build_model(obs.space, Xa, ya, floor),
            )
        if self.after_tie(obs):
            return PosteriorStandardDeviation(model)
        return self.acquisition_of(model, y)

    def optimize_acquisition(
        self, model: AddTreeGP, observations: Observations, y: Tensor, around: Tensor
    ) -> TreeCandidate:
        """Maximize LogEI (see
        [`maximize()`][treebo.add_tree.strategy.AddTreeStrategy.maximize])."""
        return self.maximize(self.acquisition_of(model, y), observations, around)

    def maximize(
        self, acqf: AcquisitionFunction, observations: Observations, around: Tensor
    ) -> TreeCandidate:
        """Maximize ``acqf`` over every path (``num_restarts // 2`` starts each)
        where the space has few paths and only real parameters, else by
        alternating continuous and discrete steps; ``around``: configurations some
        starts are drawn near."""
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
        >>> opt = TreeOptimizer(Jenatton().space, strategy="add_tree_ucb")
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
