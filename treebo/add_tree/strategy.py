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

import copy
import time
import types
from collections.abc import Callable
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.analytic import PosteriorStandardDeviation
from torch import Tensor

from treebo.add_tree.fitting import AddTreeFit
from treebo.add_tree.global_search import LogEISearch, VertexUCBSearch
from treebo.add_tree.integrated_ei import IntegratedLogEISearch
from treebo.add_tree.local_steps import LocalSteps, count_failures
from treebo.add_tree.model import AddTreeGP
from treebo.add_tree.options import AddTreeOptions, AddTreeUCBOptions
from treebo.add_tree.outliers import screen_far_out
from treebo.optim.pool import optimize_acqf_pool
from treebo.optim.tree_optimize import TreeCandidate
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
from treebo.strategies.ties import ties_the_best

#: Local steps run where the objective is deterministic, declared or inferred: a
#: fitted noise variance within this factor of its floor.
LOCAL_NOISE_FACTOR = 10.0

#: ``screen(observations, fit) -> (observations, model or None)``: the observations
#: to propose from, and the global model if the screen fitted one.
Screen = Callable[[Observations, AddTreeFit], tuple[Observations, AddTreeGP | None]]


def explores_after_tie(observations: Observations) -> bool:
    """Whether the next proposal explores: the last evaluation tied the best score
    exactly ([`treebo.strategies.ties`][treebo.strategies.ties])."""
    return ties_the_best(observations.y, observations.failed)


class _Stopwatch:
    """Seconds by stage of one proposal (what `Proposal.timings` reports)."""

    def __init__(self) -> None:
        self.start = self.split = time.perf_counter()

    def fitted(self) -> None:
        self.split = time.perf_counter()

    def proposal(self, candidate: Tensor, kind: str) -> Proposal:
        now = time.perf_counter()
        timings = {"fit": self.split - self.start, "optimize": now - self.split}
        return Proposal(candidate, kind, timings)


@register_strategy
class AddTreeStrategy(Strategy):
    """LogEI on an [`AddTreeGP`][treebo.add_tree.model.AddTreeGP], integrated over
    its hyper-parameters' posterior, with local refinement.

    The strategy composes parts, each with one job, built from ``options`` unless
    given: the global model's fitter, the screen of far-out scores, the local steps
    and the global search.

    Args:
        options: [`AddTreeOptions`][treebo.add_tree.options.AddTreeOptions].
        fit: The global model's [`AddTreeFit`][treebo.add_tree.fitting.AddTreeFit]
            (default: ``options.kernel`` with its alternatives).
        screen: The screen of far-out scores (default
            [`screen_far_out()`][treebo.add_tree.outliers.screen_far_out]; ``None``:
            every score stays).
        local_steps: The [`LocalSteps`][treebo.add_tree.local_steps.LocalSteps]
            (default: those of ``options.local``, none if it is ``None``).
        search: The global search
            (by default
            [`IntegratedLogEISearch`][treebo.add_tree.integrated_ei.IntegratedLogEISearch]:
            LogEI integrated over the hyper-parameters' posterior;
            ``LogEISearch()`` plugs in the MAP fit).
        explore: ``explore(observations)``: whether the next proposal maximizes the
            posterior standard deviation instead (default: after an exact tie with
            the best score,
            [`explores_after_tie()`][treebo.add_tree.strategy.explores_after_tie]).
        **kwargs: ``device`` and ``dtype`` of the models (default CPU,
            float64).

    Attributes:
        last_model: The global model of the last proposal.

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
    noise_declarations = frozenset({"infer", "deterministic", "known"})

    def __init__(
        self,
        options: AddTreeOptions | AddTreeUCBOptions | None = None,
        *,
        fit: AddTreeFit | None = None,
        screen: Screen | None = screen_far_out,
        local_steps: LocalSteps | None = None,
        search: LogEISearch | None = None,
        explore: Callable[[Observations], bool] = explores_after_tie,
        **kwargs: Any,
    ) -> None:
        super().__init__(options, **kwargs)
        opts = self.options
        self.model_fit = AddTreeFit.from_options(opts) if fit is None else fit
        self.screen = screen
        if local_steps is None and opts.local is not None:
            local_steps = LocalSteps(opts.local)
        self.local = local_steps
        if search is None:
            search = IntegratedLogEISearch.from_options(opts)
        self.search = search
        self.explore = explore
        self.last_model: AddTreeGP | None = None

    # ----------------------------------------------------------------- model
    def fit(self, observations: Observations) -> AddTreeGP:
        """Fit the global model to ``observations``
        ([`AddTreeFit.fit()`][treebo.add_tree.fitting.AddTreeFit.fit])."""
        self.last_model = self.model_fit.fit(observations)
        return self.last_model

    def believed(
        self, obs: Observations, model: AddTreeGP | None
    ) -> tuple[AddTreeGP, Tensor, Tensor]:
        """The global model of ``obs`` (``model``, or fitted if ``None``) and its
        training data ``X``, ``y`` (``m x d``, ``m x 1``), with the pending and
        left-out configurations (``obs.X_unseen``) believed at the model's prediction
        ([`believe_pending()`][treebo.strategies.believer.believe_pending])."""
        model = self.fit(obs) if model is None else model
        unseen = obs.X_unseen
        if not unseen.shape[0]:
            return model, obs.X, obs.y
        rebuild = self.model_fit.rebuild(obs)
        return believe_pending(model, obs.X, obs.y, unseen, rebuild)

    def screened(
        self, observations: Observations
    ) -> tuple[Observations, AddTreeGP | None]:
        """``observations`` through the screen, and the model it fitted, if any."""
        if self.screen is None:
            return observations, None
        obs, model = self.screen(observations, self.model_fit)
        if model is not None:
            self.last_model = model
        return obs, model

    def predict(self, observations: Observations) -> Prediction | None:
        """The posterior of a model fitted to ``observations`` at their
        configurations, or ``None`` where the model interpolates (a deterministic
        objective, declared or inferred as for local steps: the best observation is
        then the best guess). The fit runs on a copy of the fitter, so later
        proposals stay as they would have been."""
        if observations.noise == "deterministic":
            return None
        model = copy.deepcopy(self.model_fit).fit(observations)
        if self.resolves_locally(model, observations.noise):
            return None
        with torch.no_grad():
            posterior = model.posterior(observations.X)
        return Prediction(
            posterior.mean.squeeze(-1), posterior.variance.squeeze(-1).clamp_min(0.0)
        )

    def resolves_locally(self, model: AddTreeGP | None, noise: str) -> bool:
        """Whether local steps apply: the objective is deterministic, declared so or
        inferred (``model``'s fitted noise within `LOCAL_NOISE_FACTOR` of its
        floor); never with known noise."""
        if noise == "deterministic":
            return True
        if noise != "infer" or model is None:
            return False
        fitted = float(model.likelihood.noise.detach().max())
        return fitted <= LOCAL_NOISE_FACTOR * self.model_fit.noise_floor(noise)

    def variant(self) -> str | None:
        """The parts that differ from those ``options`` make (classes and
        settings), so that a checkpoint of a variant does not resume under the
        default and the reverse."""
        try:
            default = type(self)(self.options).parts()
        except TypeError:  # a subclass that needs more to build: every part
            default = {}
        own = self.parts()
        changed = [f"{k}={v}" for k, v in own.items() if default.get(k) != v]
        return "; ".join(changed) or None

    def parts(self) -> dict[str, str]:
        """Each part as its class and settings."""
        fit, fitter = self.model_fit, self.model_fit.fitter
        return {
            "fit": describe(
                fit,
                describe(fitter, fitter.warm_start, fitter.mll_class.__qualname__),
                fit.kernel,
                fit.alternatives,
                fit.fixed_noise_floor,
                fit.noise_prior,
            ),
            "screen": describe(self.screen),
            "local_steps": describe(
                self.local,
                *(() if self.local is None else (self.local.settings,)),
            ),
            "search": describe(self.search, sorted(vars(self.search).items())),
            "explore": describe(self.explore),
        }

    def state_dict(self) -> dict[str, Any]:
        return self.model_fit.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model_fit.load_state_dict(state)

    # -------------------------------------------------------------- proposal
    def propose(self, observations: Observations) -> Proposal:
        """The next configuration: an exploring step after a tie, a local step
        where one is due, else the global search's proposal (made a local step
        near the incumbent, moved off a resolved basin, or off a repeat)."""
        watch = _Stopwatch()
        obs, model = self.screened(observations)
        X, y = obs.X, obs.y
        if obs.X_unseen.shape[0]:
            model, X, y = self.believed(obs, model)
        if self.explore(obs):
            if model is None:
                model, X, y = self.believed(obs, None)
            watch.fitted()
            around = X[y.squeeze(-1).topk(min(3, y.shape[0])).indices]
            acqf = PosteriorStandardDeviation(model)
            candidate = self.search.maximize(acqf, obs, around).candidate[0]
            return watch.proposal(candidate, "explore")
        step, model = self.due_local_step(obs, model)
        if step is not None:
            watch.fitted()
            return watch.proposal(step, "local")
        model = self.fit(obs) if model is None else model
        watch.fitted()
        candidate, kind = self.global_proposal(obs, model, X, y)
        return watch.proposal(candidate, kind)

    def due_local_step(
        self, obs: Observations, model: AddTreeGP | None
    ) -> tuple[Tensor | None, AddTreeGP | None]:
        """A local step where failed global proposals make one due (``d``, else
        ``None``), and the global model (``model``, or fitted here). The global model
        decides whether local steps apply where the noise is inferred, and is the
        local model's mean unless that is constant."""
        local = self.local
        if local is None or not local.is_due(count_failures(obs.scores, obs.kinds)):
            return None, model
        if model is None and (local.options.mean != "constant" or obs.noise == "infer"):
            model = self.fit(obs)
        if not self.resolves_locally(model, obs.noise):
            return None, model
        step = local.candidate(obs, obs.X, obs.y, model, obs.X_unseen)
        return (None if step is None else step[0]), model

    def global_proposal(
        self, obs: Observations, model: AddTreeGP, X: Tensor, y: Tensor
    ) -> tuple[Tensor, str]:
        """The global search's candidate and its kind, after three rules: near the
        incumbent, a local step (``"local"``) or, with the basin resolved, the best
        candidate elsewhere (``"away"``); a repeat of an evaluated point gives way to
        the best path candidate not yet evaluated."""
        space, incumbent = obs.space, obs.incumbent
        local = self.local if self.resolves_locally(model, obs.noise) else None
        # Start some optimizer runs near the best observations.
        around = X[y.squeeze(-1).topk(min(3, y.shape[0])).indices]
        cand = self.search.propose(model, obs, y, around)
        candidate = cand.candidate[0]
        near = local is not None and local.is_near(space, candidate, incumbent)
        if near and self.search.redirect(count_failures(obs.scores, obs.kinds)):
            # The incumbent's basin is resolved: go to the best other basin.
            other = best_path_candidate(
                cand, lambda row: not local.is_near(space, row, incumbent)
            )
            if other is not None:
                return other, "away"
        if near:
            step = local.candidate(obs, obs.X, obs.y, model, obs.X_unseen)
            if step is not None:
                return step[0], "local"
        if is_observed(space, candidate, X, REPEAT_TOL):
            # Re-evaluating a point (or one next to it) teaches the global model
            # of a deterministic objective nothing; Add-Tree-GP-UCB asks for
            # such points because its per-vertex variances do not shrink where
            # components are confounded. Take the best new path candidate.
            other = best_path_candidate(
                cand, lambda row: not is_observed(space, row, X, REPEAT_TOL)
            )
            if other is not None:
                candidate = other
        return candidate, "bo"

    def propose_from(self, observations: Observations, candidates: Tensor) -> Proposal:
        """The pool row of highest
        [`acquisition()`][treebo.add_tree.strategy.AddTreeStrategy.acquisition]
        value (kind ``"explore"`` after a tie with the best score)."""
        watch = _Stopwatch()
        acqf = self.acquisition(observations)
        watch.fitted()
        index, _ = optimize_acqf_pool(acqf, candidates)
        kind = "explore" if self.explore(observations) else "bo"
        return watch.proposal(candidates[index], kind)

    def acquisition(self, observations: Observations) -> AcquisitionFunction:
        """The acquisition function on the global model, with pending
        configurations believed at its prediction (what a pool is scored
        with; local steps apply to continuous spaces only): the posterior standard
        deviation after a tie with the best score, else the global search's."""
        obs, model = self.screened(observations)
        model, _, y = self.believed(obs, model)
        if self.explore(obs):
            return PosteriorStandardDeviation(model)
        return self.search.acquisition(model, y)


@register_strategy
class AddTreeUCBStrategy(AddTreeStrategy):
    """Add-Tree-GP-UCB (Algorithm 2 of Ma & Blaschko, 2020) with local steps: an
    [`AddTreeStrategy`][treebo.add_tree.strategy.AddTreeStrategy] whose global search is
    [`VertexUCBSearch`][treebo.add_tree.global_search.VertexUCBSearch].

    Args:
        options: [`AddTreeUCBOptions`][treebo.add_tree.options.AddTreeUCBOptions].
        **kwargs: The parts and ``device``, ``dtype``, as for
            [`AddTreeStrategy`][treebo.add_tree.strategy.AddTreeStrategy].

    Example:
        >>> from treebo import TreeOptimizer
        >>> from treebo.test_functions import Jenatton
        >>> opt = TreeOptimizer(Jenatton().space, strategy="add_tree_ucb")
        >>> type(opt.strategy).__name__, opt.strategy.options.path_selection
        ('AddTreeUCBStrategy', 'joint')
    """

    name = "add_tree_ucb"
    options_type = AddTreeUCBOptions

    def __init__(self, options: AddTreeUCBOptions | None = None, **kwargs: Any) -> None:
        options = AddTreeUCBOptions() if options is None else options
        if kwargs.get("search") is None and type(options) is AddTreeUCBOptions:
            kwargs["search"] = VertexUCBSearch.from_options(options)
        super().__init__(options, **kwargs)


def describe(part: Any, *settings: Any) -> str:
    """``part``'s class (or function), qualified, and its ``settings``: what a
    checkpoint records of a part.

    Example:
        >>> describe(explores_after_tie)
        'treebo.add_tree.strategy.explores_after_tie'
        >>> describe(LogEISearch(), 10)
        'treebo.add_tree.global_search.LogEISearch(10,)'
    """
    if part is None:
        return "None"
    kind = part if isinstance(part, (types.FunctionType, type)) else type(part)
    text = f"{kind.__module__}.{kind.__qualname__}"
    return text + (repr(settings) if settings else "")


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
