r"""The optimization loop: ask/tell with dicts, and one-call :func:`minimize`.

::

    from treebo import minimize
    from treebo.test_functions import jenatton_space, jenatton

    result = minimize(jenatton, jenatton_space(), budget=40, seed=0)
    result.best_params, result.best_value

Every evaluation is recorded as a :class:`Trial`. An objective that raises or
returns NaN/inf is recorded as failed and the loop goes on (the model sees the
worst value observed so far at that point, so it steers away from it). With a
``checkpoint`` path the history is written atomically after every evaluation,
and a run started with the same path resumes from it.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import torch
from botorch.exceptions import ModelFittingError
from torch import Tensor
from torch.quasirandom import SobolEngine

from treebo.acquisition.add_tree_ucb import AddTreeUCB
from treebo.acquisition.fast_analytic import AddTreeLogEI
from treebo.kernels.add_tree import (
    BASE_KERNELS,
    validate_sharing,
    validate_vertex_bias,
)
from treebo.models.add_tree_gp import AddTreeGP
from treebo.models.fit import fit_model, noise_floor_likelihood, validate_fit_criterion
from treebo.optim.local_refinement import (
    linf_distance,
    local_refinement_candidate,
    validate_local_acquisition,
)
from treebo.optim.tree_optimize import (
    PATH_SELECTIONS,
    TreeCandidate,
    optimize_acqf_tree,
    optimize_add_tree_ucb,
)
from treebo.space import TreeSpace

ACQUISITIONS = ("add_tree_ucb", "log_ei")
LOCAL_MEANS = ("constant", "global", "select", "auto")
CHECKPOINT_VERSION = 1


@dataclass
class Trial:
    """One evaluation.

    Attributes:
        index: Position in the history (0-based).
        params: The configuration evaluated (active parameters only).
        value: The objective value, or ``None`` if the evaluation failed.
        status: ``"ok"`` or ``"failed"``.
        error: The error message of a failed evaluation.
        kind: ``"initial"`` (initial design), ``"bo"`` (global model),
            ``"local"`` (local refinement of the incumbent), ``"random"`` (the
            model could not be fitted), ``"away"`` (a global proposal moved off
            a resolved basin, see ``greedy_noise_floor``) or ``"user"`` (told
            without asking).
        proposal_seconds: Time spent fitting and optimizing to propose it.
        eval_seconds: Time the objective took.
    """

    index: int
    params: dict[str, Any]
    value: float | None
    status: str = "ok"
    error: str | None = None
    kind: str = "bo"
    proposal_seconds: float = 0.0
    eval_seconds: float = 0.0


@dataclass
class OptimizationResult:
    """What :func:`minimize` returns.

    Attributes:
        best_params: The best configuration evaluated.
        best_value: Its objective value.
        history: Every :class:`Trial`, failures included.
    """

    best_params: dict[str, Any] | None
    best_value: float | None
    history: list[Trial] = field(default_factory=list)

    @property
    def values(self) -> list[float | None]:
        return [t.value for t in self.history]

    def best_so_far(self, maximize: bool = False) -> list[float]:
        """Running best value after each evaluation (NaN before the first success)."""
        out, best = [], math.nan
        for t in self.history:
            if t.value is not None and (
                math.isnan(best) or (t.value > best if maximize else t.value < best)
            ):
                best = t.value
            out.append(best)
        return out


def _floor_sequence(value: float | Sequence[float], name: str) -> tuple[float, ...]:
    """A noise floor or a non-empty sequence of them, as a tuple."""
    floors = (value,) if isinstance(value, (int, float)) else value
    try:
        floors = tuple(floors)
    except TypeError:
        floors = ()
    if not floors or not all(
        isinstance(f, (int, float)) and not isinstance(f, bool) and f > 0
        for f in floors
    ):
        raise ValueError(
            f"{name} must be > 0 (or a non-empty sequence of such), got {value!r}."
        )
    return floors


def _check_count(
    value: Any, name: str, minimum: int = 1, optional: bool = False
) -> None:
    """Raise a ``ValueError`` naming ``name`` unless ``value`` is an integer
    ``>= minimum`` (or ``None`` when ``optional``)."""
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        tail = " or None" if optional else ""
        raise ValueError(f"{name} must be {kind}{tail}, got {value!r}.")


class _Failures(NamedTuple):
    """Proposals that did not improve the incumbent.

    Attributes:
        global_: Global (``"bo"``) proposals since the incumbent last improved
            or the last local step.
        local: Failed local steps since a non-local proposal last improved the
            incumbent (a new basin); local improvements do not reset it.
        local_streak: Failed local steps in a row (reset by any improvement).
    """

    global_: int
    local: int
    local_streak: int


class _Basin(NamedTuple):
    """The incumbent's basin (see :meth:`TreeOptimizer._basin`).

    Attributes:
        age: Model-based proposals (``"bo"``, ``"away"``, ``"local"``) since
            it opened.
        redirects: ``"away"`` proposals since it opened.
    """

    age: int
    redirects: int


class TreeOptimizer:
    """Ask/tell Bayesian optimization on a :class:`~treebo.space.TreeSpace`.

    Args:
        space: The search space.
        acquisition: ``"log_ei"`` (default: ``LogExpectedImprovement`` on the
            ``AddTreeGP``, optimized over all paths in one batch) or
            ``"add_tree_ucb"`` (Add-Tree-GP-UCB, Algorithm 2 of Ma & Blaschko:
            per-vertex UCB optima summed along paths; faster per proposal, but
            its per-vertex variances do not shrink where components are
            confounded, so it can settle on a wrong branch). With
            ``"add_tree_ucb"`` the loop's defaults change to the setting that
            measured best with it (``path_selection="joint"``, unlimited
            ``basin_redirects``, ``local_patience=2``, no vertex offsets); the
            paper's loop is ``path_selection="sum", basin_redirects=0,
            local_patience=0``.
            Whatever the acquisition, a global proposal that repeats an
            evaluated point (to 1e-4 of each range) and cannot become a local
            step is replaced by the best path candidate not yet evaluated.
        maximize: Maximize instead of minimize the objective.
        n_initial: Size of the tree-aware initial design (default: number of
            paths + 1, between 5 and 20).
        seed: Seed for the initial design and the optimizers.
        beta: UCB exploration weight(s); default the paper's
            ``0.2 d_v log(2t)``.
        noise_floor: Lower bound on the inferred noise variance (standardized
            units). Small values suit deterministic objectives; larger ones make
            LogEI exploit the incumbent's basin sooner. A sequence is cycled
            over the model-based proposals, e.g. ``(1e-3, 1e-6)`` alternates an
            exploiting and an exploring model.
        greedy_noise_floor: If set, the global model uses this (larger) floor
            instead of ``noise_floor`` while the incumbent's basin is open:
            from the start, and again after every improvement found by a global
            proposal, until ``basin_patience`` local steps in a row have failed
            to improve. A large floor makes LogEI refine the best basin it knows
            at once, instead of first trying the corners of every unexplored
            leaf. Once the basin is resolved, the model uses ``noise_floor``
            and a global proposal that falls within ``local_radius`` of the
            incumbent is replaced by the best one found on another path (or
            far from the incumbent on its path), so the search moves on to the
            other branches; ``local_patience`` then schedules the local steps
            that keep refining the incumbent. A sequence is cycled like
            ``noise_floor``'s.
        basin_patience: Local steps in a row that fail to improve after which
            the incumbent's basin counts as resolved (see
            ``greedy_noise_floor``).
        basin_budget: If set, the basin also counts as resolved after this
            many model-based proposals since it opened (see :meth:`_basin`),
            so a slowly improving wrong basin cannot hold the greedy phase.
        basin_redirects: How many global proposals near the incumbent a
            resolved basin may send to other paths (see ``greedy_noise_floor``)
            before it leaves them to local refinement again. ``None``
            (default): no limit with ``greedy_noise_floor`` or
            ``"add_tree_ucb"``, none otherwise. An integer applies with or
            without a greedy floor (``0``: a resolved basin only switches back
            to ``noise_floor``).
        num_restarts: Optimizer starts (per vertex for UCB, per path for EI).
        raw_samples: Random points scored to choose the starts.
        warm_start: Start each fit from the previous hyper-parameters.
        share_lengthscales: Lengthscale sharing of the :class:`AddTreeKernel`
            (default ``"depth"``: vertices at one depth share lengthscales).
        share_outputscales: Output-scale sharing of the :class:`AddTreeKernel`
            (default ``"depth"``: an unexplored branch keeps the amplitude
            learned on its siblings, so its posterior variance stays wide
            enough for the acquisition to try it).
        shared_component: Give the vertices of each depth of the tree a shared
            function in the :class:`AddTreeKernel` as well as their own, so
            that a branch learns the trends of its siblings before it is
            explored (default on). Over 10 seeds at 25 evaluations it moved
            the median log10 regret of the LogEI loop from -6.5 to -8.3 on the
            Jenatton problem and from -3.2 to -4.6 on a depth-4 tree, and that
            of Add-Tree-GP-UCB from -7.7 to -8.2 and -2.1 to -5.6, with no
            UCB seed left on a wrong branch at 50 (``benchmarks/RESULTS.md``,
            session 9).
        base_kernel: Per-vertex correlation of the :class:`AddTreeKernel`,
            ``"rbf"`` (default) or ``"matern52"``.
        vertex_bias: Per-vertex constants of the :class:`AddTreeKernel`
            (``"none"``, ``"empty"`` or ``"all"``: a learned offset for every
            branch). ``None`` (default) means ``"all"`` with ``"log_ei"``: the
            offsets take up the differences between branches, so the shared
            vertices' components learn their trends from fewer points (on a
            depth-4 tree, 15 of 20 seeds were ahead at 25 evaluations), and
            ``"none"`` with ``"add_tree_ucb"`` (not measured with offsets).
        path_selection: For ``"add_tree_ucb"``: ``"joint"`` (default) or
            ``"sum"`` (the paper's Algorithm 2; see
            :func:`~treebo.optim.optimize_add_tree_ucb`). With the UCB
            defaults for redirects and ``local_patience``, ``"joint"`` was
            ahead at 50 evaluations on the Jenatton problem and a depth-4 tree
            (median log10 regret -8.0 vs -7.0 and -4.7 vs -3.7 over 10 seeds,
            ``benchmarks/RESULTS.md``).
        local_refinement: When the global proposal lies on the incumbent's
            path within ``local_radius`` of it (the model wants to exploit),
            propose from a model of the incumbent's neighbourhood instead (see
            :func:`~treebo.optim.local_refinement_candidate`). This lets the
            loop resolve the optimum far below the global model's noise floor.
        local_radius: ``bounds``-normalized ``l_inf`` radius that triggers it.
        local_interval: If set, every ``local_interval``-th model-based proposal
            is a local step as well (when the incumbent's path holds enough
            points), whatever the global acquisition prefers: a fixed share of
            the budget refines the incumbent while the rest explores.
        local_patience: If positive, a local step is also proposed after this
            many consecutive global (``"bo"``) proposals that did not improve
            on the incumbent: once the search has a good basin, exploration
            that keeps failing hands over to refinement. ``0`` turns it off;
            ``None`` (default) means ``2`` with ``"add_tree_ucb"`` (whose
            global proposals rarely land near the incumbent) and off with
            ``"log_ei"``.
        local_shrink: Halve the local box's largest half-width
            (``local_radius``) after every local step that fails to improve
            on the incumbent (the trust-region rule of TuRBO), so failed local
            steps cannot keep the box wide; an improvement found by a global
            proposal (possibly in a new basin) restores it.
        local_noise_floor: Lower bound on the local model's noise variance,
            standardized over the neighbourhood (its resolution, independent
            of the global model's ``noise_floor``; 1e-6 before session 8).
        local_acquisition: The local steps' acquisition, ``"ucb"``
            (posterior mean + sqrt(``local_beta``) x std: a step to where the
            local model predicts the optimum) or ``"log_ei"`` (which explores
            the local box, often its corners), or a sequence of them cycled
            over the local steps. The default ``("ucb", "log_ei")`` alternates
            them: exploiting steps move fast, exploring ones let the box
            shrink onto the optimum. Over 10 seeds at 50 evaluations it
            reached a median log10 regret of -15.4 on the Jenatton problem and
            -8.6 on a depth-4 tree, against -12.3 and -6.1 for the LogEI-only
            local step of sessions 1-7 and -10.6 and -10.7 for UCB alone
            (``benchmarks/RESULTS.md``, session 8).
        local_beta: The local UCB weight (``beta`` of BoTorch's
            ``UpperConfidenceBound``).
        local_mean: The local model's prior mean: ``"auto"`` (the LogEI
            default since session 12) fits the local GP to the residuals of
            the global model's posterior mean and scores the global mean plus
            the residual's posterior (``prior_mean`` of
            :func:`~treebo.optim.local_refinement_candidate`), so that a step
            around few observations follows the global trend, while the
            neighbourhood's values spread more than the global model's noise
            standard deviation; below it, where the global mean resolves
            nothing, a constant. ``"global"`` always uses the residuals,
            ``"constant"`` never (a GP on the neighbourhood alone; the default
            of Add-Tree-GP-UCB, where ``"auto"`` is unmeasured), and
            ``"select"`` fits both at every step and keeps the one with the
            higher marginal likelihood. Over 10 seeds, ``"auto"`` reached a
            median log10 regret of -12.0 at 25 evaluations on the Jenatton
            problem (``"constant"``: -8.3) and -14.1 at 50 on a depth-4 tree
            (-10.5, lower on 10 of 10 seeds; ``benchmarks/RESULTS.md``,
            session 12).
        fit_criterion: How the model's hyper-parameters are fitted: ``"mll"``
            (marginal likelihood) or ``"loo"`` (leave-one-out predictive
            likelihood, see :func:`~treebo.models.fit_model`).
        checkpoint: Optional path of a JSON file written after every
            evaluation; if it exists, the history in it is loaded.
        device: Device for the model and optimizers (default CPU).
        dtype: Floating point type (default float64).
    """

    def __init__(
        self,
        space: TreeSpace,
        acquisition: str = "log_ei",
        maximize: bool = False,
        n_initial: int | None = None,
        seed: int | None = None,
        beta: float | Tensor | None = None,
        noise_floor: float | Sequence[float] = 1e-6,
        greedy_noise_floor: float | Sequence[float] | None = None,
        basin_patience: int = 3,
        basin_budget: int | None = None,
        basin_redirects: int | None = None,
        num_restarts: int = 10,
        raw_samples: int = 512,
        warm_start: bool = True,
        share_lengthscales: str = "depth",
        share_outputscales: str = "depth",
        shared_component: bool = True,
        base_kernel: str = "rbf",
        vertex_bias: bool | str | None = None,
        path_selection: str = "joint",
        local_refinement: bool = True,
        local_radius: float = 0.05,
        local_interval: int | None = None,
        local_patience: int | None = None,
        local_shrink: bool = False,
        local_noise_floor: float = 1e-8,
        local_acquisition: str | Sequence[str] = ("ucb", "log_ei"),
        local_beta: float = 0.1,
        local_mean: str | None = None,
        fit_criterion: str = "mll",
        checkpoint: str | os.PathLike | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        if not isinstance(space, TreeSpace):
            raise TypeError(f"space must be a TreeSpace, got {type(space).__name__}.")
        if acquisition not in ACQUISITIONS:
            raise ValueError(
                f"acquisition must be one of {ACQUISITIONS}, got {acquisition!r}."
            )
        if n_initial is None:
            n_initial = min(20, max(5, space.num_paths + 1))
        if n_initial < 1:
            raise ValueError(f"n_initial must be >= 1, got {n_initial}.")
        self._noise_floors = _floor_sequence(noise_floor, "noise_floor")
        self._greedy_floors = (
            None
            if greedy_noise_floor is None
            else _floor_sequence(greedy_noise_floor, "greedy_noise_floor")
        )
        _check_count(basin_patience, "basin_patience")
        _check_count(basin_budget, "basin_budget", optional=True)
        _check_count(basin_redirects, "basin_redirects", minimum=0, optional=True)
        self.greedy_noise_floor = greedy_noise_floor
        self.basin_patience = basin_patience
        self.basin_budget = basin_budget
        self.basin_redirects = basin_redirects
        self.space = space
        self.acquisition = acquisition
        self.maximize = maximize
        self.n_initial = n_initial
        self.seed = seed
        self.beta = beta
        self.noise_floor = noise_floor
        self.num_restarts = num_restarts
        self.raw_samples = raw_samples
        self.warm_start = warm_start
        self.share_lengthscales = share_lengthscales
        self.share_outputscales = share_outputscales
        if not isinstance(shared_component, bool):
            raise ValueError(
                f"shared_component must be a bool, got {shared_component!r}."
            )
        self.shared_component = shared_component
        if base_kernel not in BASE_KERNELS:
            raise ValueError(
                f"base_kernel must be one of {BASE_KERNELS}, got {base_kernel!r}."
            )
        self.base_kernel = base_kernel
        if vertex_bias is None:
            vertex_bias = "none" if acquisition == "add_tree_ucb" else "all"
        self.vertex_bias = validate_vertex_bias(vertex_bias)
        if path_selection not in PATH_SELECTIONS:
            raise ValueError(
                f"path_selection must be one of {PATH_SELECTIONS}, "
                f"got {path_selection!r}."
            )
        self.path_selection = path_selection
        validate_sharing(share_lengthscales, "share_lengthscales")
        validate_sharing(share_outputscales, "share_outputscales")
        validate_fit_criterion(fit_criterion, "fit_criterion")
        self.fit_criterion = fit_criterion
        if not local_radius > 0:
            raise ValueError(f"local_radius must be > 0, got {local_radius}.")
        self.local_refinement = local_refinement
        self.local_radius = local_radius
        _check_count(local_interval, "local_interval", optional=True)
        _check_count(local_patience, "local_patience", minimum=0, optional=True)
        if local_patience is None:
            local_patience = 2 if acquisition == "add_tree_ucb" else 0
        self.local_interval = local_interval
        self.local_patience = local_patience
        self.local_shrink = local_shrink
        if not local_noise_floor > 0:
            raise ValueError(f"local_noise_floor must be > 0, got {local_noise_floor}.")
        self.local_noise_floor = local_noise_floor
        if isinstance(local_acquisition, str):
            local_acquisitions = (local_acquisition,)
        elif isinstance(local_acquisition, Sequence) and local_acquisition:
            local_acquisitions = tuple(local_acquisition)
        else:
            raise ValueError(
                "local_acquisition must be a name or a non-empty sequence of "
                f"names, got {local_acquisition!r}."
            )
        for name in local_acquisitions:
            validate_local_acquisition(
                name, local_beta, ("local_acquisition", "local_beta")
            )
        self._local_acquisitions = local_acquisitions
        self.local_acquisition = local_acquisition
        self.local_beta = local_beta
        if local_mean is None:
            local_mean = "constant" if acquisition == "add_tree_ucb" else "auto"
        if local_mean not in LOCAL_MEANS:
            raise ValueError(
                f"local_mean must be one of {LOCAL_MEANS}, got {local_mean!r}."
            )
        self.local_mean = local_mean
        self.device = (
            torch.device(device) if device is not None else torch.device("cpu")
        )
        self.dtype = dtype
        self.checkpoint = Path(checkpoint) if checkpoint is not None else None
        self.history: list[Trial] = []
        self._pending: list[dict[str, Any]] = []
        self._state: dict[str, Tensor] | None = None
        self._initial_design = self._make_initial_design()
        self.last_model: AddTreeGP | None = None
        if self.checkpoint is not None and self.checkpoint.exists():
            self._load_checkpoint()

    # ------------------------------------------------------------ design
    def _make_initial_design(self) -> list[dict[str, Any]]:
        """Paths in a shuffled round-robin; continuous values from scrambled Sobol."""
        space, n = self.space, self.n_initial
        gen = torch.Generator()
        gen.manual_seed(0 if self.seed is None else self.seed)
        order = torch.randperm(space.num_paths, generator=gen)
        paths = order.repeat(n // space.num_paths + 1)[:n]
        sobol = SobolEngine(
            space.dim,
            scramble=True,
            seed=int(torch.randint(2**31 - 1, (1,), generator=gen)),
        )
        u = sobol.draw(n, dtype=torch.float64)
        X = space.bounds[0] + u * (space.bounds[1] - space.bounds[0])
        X = space.set_paths(X, paths)
        return space.to_dicts(X)

    # ---------------------------------------------------------- ask/tell
    def ask(self) -> dict[str, Any]:
        """The next configuration to evaluate (a dict of active parameters).

        Parallel or asynchronous workers may call ``ask`` again before telling
        earlier results: configurations asked for and not yet told are
        pending, and a model-based proposal treats them as observed at the
        model's predicted value (the "kriging believer"), so the workers get
        different configurations.
        """
        n_done = len(self.history) + len(self._pending)
        if n_done < self.n_initial:
            params = self._initial_design[n_done]
            kind = "initial"
            seconds = 0.0
        elif not any(t.status == "ok" for t in self.history):
            # Nothing succeeded yet: keep exploring at random.
            params = self.space.to_dicts(
                self.space.sample(1, seed=self._seed_for(n_done))
            )[0]
            kind, seconds = "initial", 0.0
        else:
            t0 = time.perf_counter()
            try:
                params, kind = self._propose()
            except ModelFittingError as err:
                # Keep the run alive: a random proposal beats a crash.
                warnings.warn(
                    f"treebo: model fitting failed ({err}); proposing a random "
                    "configuration instead.",
                    RuntimeWarning,
                    stacklevel=2,
                )
                params = self.space.to_dicts(
                    self.space.sample(1, seed=self._seed_for(n_done))
                )[0]
                kind = "random"
            seconds = time.perf_counter() - t0
        self._pending.append({"params": params, "kind": kind, "seconds": seconds})
        return dict(params)

    def tell(
        self,
        params: Mapping[str, Any],
        value: float | None | BaseException,
        eval_seconds: float = 0.0,
    ) -> Trial:
        """Record the outcome of evaluating ``params``.

        Args:
            params: A configuration (normally one returned by :meth:`ask`).
            value: The objective value; ``None``, NaN, inf or an exception
                records a failure.
            eval_seconds: How long the evaluation took.
        """
        self.space.validate(params)
        pending = next((p for p in self._pending if p["params"] == dict(params)), None)
        if pending is not None:
            self._pending.remove(pending)
        status, error, val = "ok", None, None
        if isinstance(value, BaseException):
            status, error = "failed", f"{type(value).__name__}: {value}"
        else:
            try:
                val = None if value is None else float(value)
            except (TypeError, ValueError):
                status, error = "failed", f"objective returned {value!r}"
            if val is None or not math.isfinite(val):
                status = "failed"
                error = error or f"objective returned {value!r}"
                val = None
        trial = Trial(
            index=len(self.history),
            params=dict(params),
            value=val,
            status=status,
            error=error,
            kind=pending["kind"] if pending else "user",
            proposal_seconds=pending["seconds"] if pending else 0.0,
            eval_seconds=eval_seconds,
        )
        self.history.append(trial)
        if self.checkpoint is not None:
            self._save_checkpoint()
        return trial

    @property
    def best_trial(self) -> Trial | None:
        ok = [t for t in self.history if t.status == "ok"]
        if not ok:
            return None
        key = (lambda t: t.value) if self.maximize else (lambda t: -t.value)
        return max(ok, key=key)

    def result(self) -> OptimizationResult:
        best = self.best_trial
        return OptimizationResult(
            best_params=None if best is None else dict(best.params),
            best_value=None if best is None else best.value,
            history=list(self.history),
        )

    # ------------------------------------------------------------- model
    def _seed_for(self, n: int) -> int:
        return (0 if self.seed is None else self.seed) * 100_003 + n

    def training_data(self) -> tuple[Tensor, Tensor]:
        """Encoded inputs and sign-adjusted targets (``n x d``, ``n x 1``).

        Targets are ``value`` when maximizing and ``-value`` when minimizing;
        failed points get the worst successful target.
        """
        X = self.space.to_tensor([t.params for t in self.history])
        sign = 1.0 if self.maximize else -1.0
        y = torch.tensor(
            [sign * t.value if t.value is not None else math.nan for t in self.history],
            dtype=torch.float64,
        )
        ok = ~torch.isnan(y)
        y = torch.where(ok, y, y[ok].min())
        return (
            X.to(self.device, self.dtype),
            y.unsqueeze(-1).to(self.device, self.dtype),
        )

    def _build_model(self, X: Tensor, y: Tensor, noise_floor: float) -> AddTreeGP:
        """An unfitted :class:`AddTreeGP` with the loop's settings on ``X, y``."""
        return AddTreeGP(
            X,
            y,
            self.space.to_hierarchical_dependencies(),
            bounds=self.space.bounds.to(X),
            likelihood=noise_floor_likelihood(noise_floor),
            share_lengthscales=self.share_lengthscales,
            share_outputscales=self.share_outputscales,
            shared_component=self.shared_component,
            base_kernel=self.base_kernel,
            vertex_bias=self.vertex_bias,
        ).to(X)

    def fit_model(self) -> AddTreeGP:
        """Fit an :class:`AddTreeGP` to the history (warm-started if enabled)."""
        X, y = self.training_data()
        last_error: Exception | None = None
        base = self._current_noise_floor()
        for attempt, floor in enumerate((base, base * 100, base * 1e4)):
            model = self._build_model(X, y, floor)
            if self.warm_start and self._state is not None and attempt == 0:
                try:
                    model.load_state_dict(self._state, strict=False)
                except RuntimeError:  # shapes changed: fit from the defaults
                    pass
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fit_model(model, self.fit_criterion)
                break
            except (ModelFittingError, RuntimeError, ValueError) as err:
                last_error = err
        else:
            raise ModelFittingError(f"could not fit the model: {last_error}")
        model.eval()
        self._state = {
            k: v.detach().clone() for k, v in model.state_dict().items() if "raw_" in k
        }
        self.last_model = model
        return model

    def _current_noise_floor(self) -> float:
        """The global model's noise floor for the next proposal: the greedy
        floor while the incumbent's basin is open, else ``noise_floor``
        (cycled over proposals if it is a sequence)."""
        floors = self._noise_floors
        if self._greedy_floors is not None and self.basin_open:
            floors = self._greedy_floors
        step = max(0, len(self.history) - self.n_initial)
        return floors[step % len(floors)]

    def _local_candidate(
        self, X: Tensor, y: Tensor, seed: int, model: AddTreeGP | None = None
    ) -> Tensor | None:
        """A local step, or ``None``; ``model`` is the global model of ``X``,
        ``y`` (needed unless ``local_mean="constant"``)."""
        # Trust-region rule: every local step that fails to improve halves the
        # largest box; an improvement that is not a local step restores it.
        radius = self.local_radius
        if self.local_shrink:
            radius = radius * 0.5 ** min(self._failures().local, 40)
        prior_mean, resolution = None, 0.0
        if self.local_mean != "constant":
            if model is None:
                raise ValueError(f"local_mean={self.local_mean!r} needs the model.")

            def prior_mean(Z: Tensor) -> Tensor:
                return model.posterior_mean_variance(Z)[0]

            if self.local_mean == "auto":
                resolution = model.likelihood.noise.detach().max().sqrt()
                scale = model._outcome_scale()
                if scale is not None:
                    resolution = resolution * scale[0].max()
                resolution = float(resolution)

        candidate = local_refinement_candidate(
            self.space,
            X,
            y,
            radius=radius,
            noise_floor=self.local_noise_floor,
            acquisition=self._next_local_acquisition(),
            beta=self.local_beta,
            seed=seed,
            prior_mean=prior_mean,
            select_mean=self.local_mean == "select",
            prior_resolution=resolution,
        )
        # A local step that lands exactly on an evaluated (or pending) point,
        # say a corner of the box, teaches a deterministic objective nothing:
        # let the global proposal stand instead.
        if candidate is not None and self._observed(candidate[0], X, tol=1e-12):
            return None
        return candidate

    def _next_local_acquisition(self) -> str:
        """The acquisition of the next local step (``local_acquisition``
        cycled over the local steps in the history)."""
        done = sum(t.kind == "local" for t in self.history)
        return self._local_acquisitions[done % len(self._local_acquisitions)]

    def _local_step_due(self) -> bool:
        """Whether ``local_interval`` or ``local_patience`` asks for a local step."""
        if not self.local_refinement:
            return False
        if self.local_interval:
            step = len(self.history) - self.n_initial  # model-based proposals
            if step % self.local_interval == self.local_interval - 1:
                return True
        if self.local_patience:
            return self._failures().global_ >= self.local_patience
        return False

    @property
    def basin_open(self) -> bool:
        """Whether the incumbent's basin is still being refined: fewer than
        ``basin_patience`` local steps in a row have failed to improve since a
        global proposal (or the initial design) last improved the incumbent,
        and (if ``basin_budget`` is set) fewer than ``basin_budget`` proposals
        have been made since the basin opened."""
        if self.basin_budget is not None and self._basin().age >= self.basin_budget:
            return False
        return self._failures().local_streak < self.basin_patience

    def _failures(self) -> _Failures:
        """Counts of proposals that did not improve the incumbent (see
        :class:`_Failures`)."""
        sign = 1.0 if self.maximize else -1.0
        best, global_failures, local_failures, streak = -math.inf, 0, 0, 0
        for trial in self.history:
            score = -math.inf if trial.value is None else sign * trial.value
            improved = score > best
            best = max(best, score)
            if trial.kind == "local":
                global_failures = 0
                local_failures += 0 if improved else 1
                streak = 0 if improved else streak + 1
            elif improved:
                global_failures = local_failures = streak = 0
            elif trial.kind in ("bo", "away"):
                global_failures += 1
        return _Failures(global_failures, local_failures, streak)

    def _basin(self) -> _Basin:
        """Proposals since the incumbent's basin opened (see :class:`_Basin`).

        A basin opens when a non-local trial improves on the incumbent from
        another path or from farther than ``local_radius`` (a nearby global
        improvement refines the same basin).
        """
        if not self.history:
            return _Basin(0, 0)
        X, y = self.training_data()
        best, incumbent, age, away = -math.inf, None, 0, 0
        scores = y.squeeze(-1).tolist()
        for trial, x, score in zip(self.history, X, scores, strict=True):
            if trial.value is not None and score > best:
                new_basin = trial.kind != "local" and (
                    incumbent is None
                    or linf_distance(self.space, x, incumbent) > self.local_radius
                )
                best, incumbent = score, x
                if new_basin:
                    age = away = 0
                    continue
            if trial.kind in ("bo", "away", "local"):
                age += 1
            away += trial.kind == "away"
        return _Basin(age, away)

    def _believe_pending(
        self, model: AddTreeGP, X: Tensor, y: Tensor
    ) -> tuple[AddTreeGP, Tensor, Tensor]:
        r"""Condition on the pending configurations at their predicted values.

        The "kriging believer" for asynchronous or parallel evaluation: each
        configuration asked for but not yet told is added to the data with
        the posterior mean of ``model`` (fitted to the finished evaluations)
        as its value, and the model is rebuilt on that data with the same
        hyper-parameters (no refit). Its variance at the pending points drops
        to the noise floor, so the acquisition turns elsewhere.

        Returns:
            The model on the augmented data, and that data (``(n + p) x d``,
            ``(n + p) x 1``).
        """
        Xp = self.space.to_tensor([p["params"] for p in self._pending]).to(X)
        with torch.no_grad():
            mean, _ = model.posterior_mean_variance(Xp)
        X_aug = torch.cat([X, Xp])
        y_aug = torch.cat([y, mean.reshape(-1, 1)])
        floor = model.likelihood.noise_covar.raw_noise_constraint.lower_bound
        believer = self._build_model(X_aug, y_aug, float(floor))
        believer.load_state_dict(self._state, strict=False)
        return believer.eval(), X_aug, y_aug

    def _propose(self) -> tuple[dict[str, Any], str]:
        """The next configuration and its kind (``"bo"``, ``"away"`` or ``"local"``)."""
        seed = self._seed_for(len(self.history))
        X, y = self.training_data()
        incumbent = X[int(y.squeeze(-1).argmax())]
        model = None
        if self._pending:
            model, X, y = self._believe_pending(self.fit_model(), X, y)
        if self._local_step_due():
            if self.local_mean != "constant" and model is None:
                model = self.fit_model()
            local = self._local_candidate(X, y, seed, model)
            if local is not None:
                return self.space.to_dict(local[0].cpu()), "local"
        if model is None:
            model = self.fit_model()
        # Start some optimizer runs near the best observations.
        around = X[y.squeeze(-1).topk(min(3, y.shape[0])).indices]
        if self.acquisition == "add_tree_ucb":
            acqf = AddTreeUCB(model, beta=self.beta, maximize=True)
            cand = optimize_add_tree_ucb(
                acqf,
                self.space,
                num_restarts=self.num_restarts,
                raw_samples=self.raw_samples,
                seed=seed,
                around=around,
                path_selection=self.path_selection,
            )
        else:
            acqf = AddTreeLogEI(model, best_f=y.max())
            cand = optimize_acqf_tree(
                acqf,
                self.space,
                num_restarts=max(1, self.num_restarts // 2),
                raw_samples=max(self.raw_samples // 4, self.num_restarts),
                seed=seed,
                around=around,
            )
        candidate, kind = cand.candidate[0], "bo"
        near = linf_distance(self.space, candidate, incumbent) <= self.local_radius
        if near and not self.basin_open and self._redirect_allowed():
            # The incumbent's basin is resolved: go to the best other basin.
            other = self._best_path_candidate(
                cand,
                lambda row: (
                    linf_distance(self.space, row, incumbent) > self.local_radius
                ),
            )
            if other is not None:
                return self.space.to_dict(other.cpu()), "away"
        if near and self.local_refinement:
            local = self._local_candidate(X, y, seed, model)
            if local is not None:
                candidate, kind = local[0], "local"
        if kind == "bo" and self._observed(candidate, X):
            # Re-evaluating a point (or one next to it) teaches the global model
            # of a deterministic objective nothing; Add-Tree-GP-UCB asks for
            # such points because its per-vertex variances do not shrink where
            # components are confounded. Take the best path candidate that is
            # new instead. (Near the incumbent a local step comes first.)
            other = self._best_path_candidate(
                cand, lambda row: not self._observed(row, X)
            )
            if other is not None:
                candidate = other
        return self.space.to_dict(candidate.cpu()), kind

    def _redirect_allowed(self) -> bool:
        """Whether a resolved basin may send one more proposal elsewhere."""
        if self.basin_redirects is None:
            ucb = self.acquisition == "add_tree_ucb"
            return ucb or self._greedy_floors is not None
        return self._basin().redirects < self.basin_redirects

    def _observed(self, x: Tensor, X: Tensor, tol: float = 1e-4) -> bool:
        """Whether ``x`` (``d``) repeats a row of ``X`` (``n x d``), to ``tol``
        of each column's range."""
        width = (self.space.bounds[1] - self.space.bounds[0]).to(X)
        gap = (X - x).abs() / width.clamp_min(torch.finfo(X.dtype).tiny)
        return bool((gap.amax(-1) <= tol).any())

    def _best_path_candidate(
        self, cand: TreeCandidate, accept: Callable[[Tensor], bool]
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

    # -------------------------------------------------------- checkpoint
    def _save_checkpoint(self) -> None:
        payload = {
            "version": CHECKPOINT_VERSION,
            "maximize": self.maximize,
            "seed": self.seed,
            "acquisition": self.acquisition,
            "parameters": self.space.parameter_names,
            "history": [asdict(t) for t in self.history],
        }
        tmp = self.checkpoint.with_name(self.checkpoint.name + ".tmp")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w") as fh:
            json.dump(payload, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.checkpoint)

    def _load_checkpoint(self) -> None:
        try:
            payload = json.loads(self.checkpoint.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(
                f"checkpoint {self.checkpoint} is not valid JSON: {err}"
            ) from None
        if payload.get("parameters") != self.space.parameter_names:
            raise ValueError(
                f"checkpoint {self.checkpoint} was written for parameters "
                f"{payload.get('parameters')}, not {self.space.parameter_names}."
            )
        if bool(payload.get("maximize")) != self.maximize:
            raise ValueError(
                f"checkpoint {self.checkpoint} was written with "
                f"maximize={payload.get('maximize')}."
            )
        for record in payload["history"]:
            trial = Trial(**record)
            self.space.validate(trial.params)
            self.history.append(trial)


def _progress(i: int, total: int, best: float | None, width: int = 30) -> None:
    filled = int(width * i / max(total, 1))
    bar = "#" * filled + "." * (width - filled)
    best_s = "-" if best is None else f"{best:.6g}"
    end = "\n" if i >= total else ""
    sys.stderr.write(f"\r[{bar}] {i}/{total} best={best_s}{end}")
    sys.stderr.flush()


def _evaluate(
    objective: Callable[[dict[str, Any]], float], params: dict[str, Any]
) -> tuple[Any, float]:
    """``(value, seconds)`` of one evaluation; an exception is returned as the value.

    Module-level (so that a process pool can pickle it); ``KeyboardInterrupt``
    and other non-``Exception`` errors propagate.
    """
    t0 = time.perf_counter()
    try:
        value: Any = objective(params)
    except Exception as err:  # recorded as a failed trial, the loop goes on
        if os.environ.get("TREEBO_DEBUG"):
            traceback.print_exc()
        value = err
    return value, time.perf_counter() - t0


def minimize(
    objective: Callable[[dict[str, Any]], float],
    space: TreeSpace,
    budget: int,
    seed: int | None = None,
    *,
    maximize: bool = False,
    progress: bool = False,
    checkpoint: str | os.PathLike | None = None,
    callback: Callable[[Trial], None] | None = None,
    n_workers: int = 1,
    executor: Executor | None = None,
    **optimizer_kwargs: Any,
) -> OptimizationResult:
    """Minimize (or maximize) ``objective`` over ``space`` with ``budget`` evaluations.

    With ``n_workers > 1`` up to that many evaluations run at once: whenever one
    finishes, its result is told and a new configuration is asked for, with the
    ones still running treated as pending (see :meth:`TreeOptimizer.ask`). The
    run then depends on the order in which evaluations finish, so a seed no
    longer fixes it.

    Args:
        objective: Takes a dict of active parameter values, returns a float.
            Exceptions and NaN/inf results are recorded as failed trials.
        space: The search space.
        budget: Total number of evaluations (a resumed run counts the ones in
            its checkpoint).
        seed: Seed for reproducibility.
        maximize: Maximize instead.
        progress: Print a progress bar to stderr.
        checkpoint: JSON file written after every evaluation; resumed from if
            it exists. Evaluations still running when a run is killed are not
            in it (a resumed run proposes again).
        callback: Called with each new :class:`Trial`.
        n_workers: How many evaluations may run at once.
        executor: A :class:`concurrent.futures.Executor` to run the evaluations
            in (e.g. a ``ProcessPoolExecutor``, whose ``objective`` must then be
            picklable); it is not shut down here. Default: the calling thread
            when ``n_workers == 1``, else a ``ThreadPoolExecutor`` with
            ``n_workers`` threads (suits objectives that wait on a subprocess,
            a GPU or a remote job).
        **optimizer_kwargs: Passed to :class:`TreeOptimizer` (``acquisition``,
            ``n_initial``, ``beta``, ``device``, ...).

    Returns:
        An :class:`OptimizationResult`.
    """
    if not callable(objective):
        raise TypeError("objective must be callable.")
    if not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget must be a positive integer, got {budget!r}.")
    if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
        raise ValueError(f"n_workers must be a positive integer, got {n_workers!r}.")
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(
            "executor must be a concurrent.futures.Executor, got "
            f"{type(executor).__name__}."
        )
    opt = TreeOptimizer(
        space, seed=seed, maximize=maximize, checkpoint=checkpoint, **optimizer_kwargs
    )

    def record(params: dict[str, Any], value: Any, seconds: float) -> None:
        trial = opt.tell(params, value, eval_seconds=seconds)
        if callback is not None:
            callback(trial)
        if progress:
            best = opt.best_trial
            _progress(len(opt.history), budget, None if best is None else best.value)

    if executor is None and n_workers == 1:
        while len(opt.history) < budget:
            params = opt.ask()
            record(params, *_evaluate(objective, dict(params)))
        return opt.result()

    if isinstance(executor, ProcessPoolExecutor):
        try:
            pickle.dumps(objective)
        except Exception as err:  # else every trial would fail the same way
            raise TypeError(
                "objective must be picklable to run in a ProcessPoolExecutor "
                f"(define it at module level): {err}"
            ) from err
    own_executor = executor is None
    pool = ThreadPoolExecutor(n_workers) if executor is None else executor
    running: dict[Future, dict[str, Any]] = {}
    try:
        while len(opt.history) < budget:
            while len(running) < n_workers and len(opt.history) + len(running) < budget:
                params = opt.ask()
                running[pool.submit(_evaluate, objective, dict(params))] = params
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                params = running.pop(future)
                try:
                    value, seconds = future.result()
                except Exception as err:  # e.g. a worker process died
                    value, seconds = err, 0.0
                record(params, value, seconds)
    finally:
        # Keep evaluations that finished while the loop was being stopped.
        for future, params in running.items():
            if future.done() and not future.cancelled() and not future.exception():
                value, seconds = future.result()
                opt.tell(params, value, eval_seconds=seconds)
            else:
                future.cancel()
        if own_executor:
            pool.shutdown(wait=False, cancel_futures=True)
    return opt.result()
