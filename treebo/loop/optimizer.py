r"""Ask/tell Bayesian optimization over a tree-structured search space.

[`TreeOptimizer`][treebo.loop.optimizer.TreeOptimizer] is the loop's core: the history,
the pending configurations, the initial design, failed evaluations and checkpoints; a
strategy ([`treebo.strategies`][treebo.strategies], ``strategy=``) proposes.

Example:
    >>> from treebo import TreeOptimizer
    >>> from treebo.test_functions import Jenatton
    >>> problem = Jenatton()
    >>> opt = TreeOptimizer(problem.space, seed=0)
    >>> for _ in range(8):
    ...     params = opt.ask()
    ...     trial = opt.tell(params, problem.objective(params))
    >>> opt.best_trial.value < 1.0
    True
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from numbers import Integral
from pathlib import Path
from typing import Any, overload

import torch
from botorch.exceptions import ModelFittingError
from botorch.utils.sampling import manual_seed
from torch import Tensor

from treebo.gp.noise import validate_noise, validate_sem
from treebo.loop.candidates import (
    SAME_CONFIGURATION_TOL,
    encode_candidates,
    fresh_candidates,
)
from treebo.loop.checkpoint import Journal, run_identity
from treebo.loop.design import initial_design, initial_size
from treebo.loop.history import History, OptimizationResult, Trial, result_of
from treebo.loop.log import log_trial
from treebo.loop.outcomes import parse_outcome, standardize_scores, standardized_noise
from treebo.loop.recommendation import recommend
from treebo.space import ConfigurationError, TreeSpace
from treebo.space.parameters import as_real_number
from treebo.strategies.base import (
    Observations,
    Strategy,
    resolve_strategy,
    strategy_identity,
)
from treebo.strategies.validation import check_count

#: The number of trials before the proposal being made in this context (``-1``
#: outside one): how far a run is, for a runner of many runs
#: ([`run_in_lockstep()`][treebo.loop.lockstep.run_in_lockstep]).
current_proposal: ContextVar[int] = ContextVar("current_proposal", default=-1)

#: A told configuration matches a pending one if its encoding differs by at
#: most this fraction of each column's range (round-off in user code, e.g. a
#: float32 round trip).
PENDING_MATCH_TOL = SAME_CONFIGURATION_TOL

#: Seeds are below this (NumPy's range); proposals derive theirs from it.
MAX_SEED = 2**32

#: Warn once when this many evaluations have failed and none has succeeded.
FAILURES_BEFORE_WARNING = 3


class TreeOptimizer:
    """Ask/tell Bayesian optimization with dicts in and out.

    Args:
        space: The search space.
        strategy: What proposes the next configuration: a registered name
            (``"add_tree"``, the default: LogEI on an
            [`AddTreeGP`][treebo.add_tree.model.AddTreeGP]; ``"add_tree_ucb"``;
            ``"tree_additive"``; ``"treed"``; ``"jenatton_tree"``,
            ``"jenatton_tree_nonlinear"``, ``"independent"``; ``"bktf"``), or a
            [`Strategy`][treebo.strategies.base.Strategy] with its options, device
            and dtype (``AddTreeStrategy(AddTreeOptions(...), device="cuda")``).
        maximize: Maximize instead of minimize the objective.
        n_initial: Size of the initial design (default: paths + 1, in [5, 20]).
        seed: Seed of the initial design and the optimizers, in ``[0, 2**32)``.
        noise: What is known of the objective's noise
            ([`treebo.gp.noise`][treebo.gp.noise]): ``"infer"`` (the default: the
            model fits the noise variance under a prior, so noisy, tied and
            step-shaped values are smoothed), ``"deterministic"`` (the same
            configuration always gives the same value: the model interpolates and
            local steps refine the incumbent to many digits), or a number, the noise
            variance of every evaluation in the objective's units
            (``tell(..., sem=s)``: one evaluation's standard error). Except where
            deterministic, [`result()`][treebo.loop.optimizer.TreeOptimizer.result]
            recommends the evaluated configuration the model predicts best.
        checkpoint: A journal file (JSON lines) that every evaluation is appended to as
            soon as it is told; if it exists, the run resumes from it (it must have the
            same settings). One process at a time holds it (a lock beside it, released
            by [`close()`][treebo.loop.optimizer.TreeOptimizer.close] or when the
            process ends); another is refused with
            [`CheckpointInUseError`][treebo.loop.checkpoint.CheckpointInUseError]. A
            newer optimizer of this process on the same file takes it over, and the
            older one raises that error if told again.
        fingerprint: JSON data that identifies what the run evaluates; a resumed run
            must match it ([`minimize()`][treebo.loop.run.minimize] records its
            objective's name and code hash and its pool's hash:
            [`treebo.loop.fingerprint`][treebo.loop.fingerprint]).
        model: Deprecated alias of ``strategy``; removed in treebo 0.3.

    Example:
        >>> import pathlib, tempfile
        >>> from treebo.space import Choice, Real, TreeSpace, Vertex
        >>> space = TreeSpace(Vertex(choices=[Choice("model", {
        ...     "linear": Vertex([Real("l2", 1e-6, 1.0, log_scale=True)]),
        ...     "tree": Vertex([Real("depth", 1, 10)])})]))
        >>> def objective(params):
        ...     return params.get("l2", 0.1) + params.get("depth", 5) / 10
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
        >>> opt = TreeOptimizer(space, seed=0, checkpoint=path)
        >>> params = opt.ask()
        >>> opt.tell(params, objective(params)).status
        'ok'
        >>> len(TreeOptimizer(space, seed=0, checkpoint=path).history)  # resumed
        1
    """

    def __init__(
        self,
        space: TreeSpace,
        *,
        strategy: str | Strategy | None = None,
        maximize: bool = False,
        n_initial: int | None = None,
        seed: int | None = None,
        noise: str | float = "infer",
        checkpoint: str | os.PathLike | None = None,
        fingerprint: dict[str, Any] | None = None,
        model: Any = None,
    ) -> None:
        if not isinstance(space, TreeSpace):
            raise TypeError(f"space must be a TreeSpace, got {type(space).__name__}.")
        self.noise = validate_noise(noise)
        self.strategy = resolve_strategy(strategy, model).claim()
        self.strategy.validate_space(space)
        declared = self.noise if isinstance(self.noise, str) else "known"
        if declared not in self.strategy.noise_declarations:
            what = {
                "deterministic": "hold the noise at a floor (noise='deterministic')",
                "known": "take known noise variances (noise=<variance>)",
                "infer": "infer the noise (noise='infer')",
            }[declared]
            honoured = ", ".join(
                repr(d) for d in sorted(self.strategy.noise_declarations)
            )
            raise ConfigurationError(
                f"noise: strategy={self.strategy.name!r} cannot {what}; it honours "
                f"noise={honoured}. The Add-Tree strategies honour every declaration."
            )
        n_initial = initial_size(space, n_initial)
        seed = None if seed is None else check_count(seed, "seed", 0, MAX_SEED)
        if not isinstance(maximize, bool):
            raise TypeError(f"maximize must be a bool, got {maximize!r}.")
        if checkpoint is not None and Path(checkpoint).is_dir():
            raise ValueError(
                f"checkpoint must be a file path, got the directory {checkpoint}."
            )
        self.space = space
        self.maximize = maximize
        self.n_initial = n_initial
        self.seed = seed
        self.device = self.strategy.device
        self.dtype = self.strategy.dtype
        self.checkpoint = Path(checkpoint) if checkpoint is not None else None
        self.history = History(space)
        self._pending: list[dict[str, Any]] = []
        # The last encoded tensor pool: (the tensor, its version, the encoding).
        self._encoded_pool: tuple[Tensor, int, Tensor] | None = None
        design = initial_design(space, n_initial, seed)
        encoded = space.to_tensor(design)
        snapped = self.strategy.snap(space, encoded)
        if not torch.equal(snapped, encoded):  # e.g. onto a grid model's grid
            design = space.to_dicts(space.canonicalize(snapped))
        self._initial_design = design
        self._identity = run_identity(
            space,
            strategy_identity(self.strategy),
            self.strategy.options_dict(),
            seed,
            self.maximize,
            n_initial,
            self.noise,
            fingerprint,
        )
        self._journal = None
        self._journaled_state: dict[str, Any] = {}
        self._journaled_recommendation: tuple[int, Any] | None = None
        if self.checkpoint is not None:
            self._journal = Journal(self.checkpoint, self._identity)
            saved = self._journal.open(space)
            if saved is not None:
                self.history.extend(saved.history)
                self.strategy.load_state_dict(saved.strategy_state)
                self._journaled_state = saved.strategy_state
        self._warned_failures = False
        #: Seconds the last model-based proposal spent, by stage (``"fit"``,
        #: ``"optimize"``, ...; the strategy's `Proposal.timings`).
        self.last_timings: dict[str, float] = {}

    # ---------------------------------------------------------- ask/tell
    @overload
    def ask(
        self,
        n: None = None,
        candidates: Sequence[Mapping[str, Any]] | Tensor | None = None,
    ) -> dict[str, Any]: ...

    @overload
    def ask(
        self, n: int, candidates: Sequence[Mapping[str, Any]] | Tensor | None = None
    ) -> list[dict[str, Any]]: ...

    def ask(
        self,
        n: int | None = None,
        candidates: Sequence[Mapping[str, Any]] | Tensor | None = None,
    ) -> dict[str, Any] | list[dict[str, Any]]:
        """The next configuration to evaluate (a dict of active parameters), or the
        next ``n`` (a list), chosen jointly.

        Parallel or asynchronous workers may call ``ask`` again before telling
        earlier results: configurations asked for and not yet told are
        pending, and the strategy treats them as observed at the model's
        predicted value (the Kriging believer), so the workers get different
        configurations. ``ask(n)`` is that, ``n`` times in a row: a q-batch chosen
        greedily, each configuration given the ones before it (as BoTorch's
        sequential q-batch optimization), for ``n`` workers that start together.

        Args:
            n: How many configurations (default: one, returned as a dict rather
                than a list). A pool given as the first argument is taken as
                ``candidates``.
            candidates: A pool to choose from (a tabular benchmark, a pre-computed
                design): configurations, a ``DataFrame`` or their ``m x d`` encoding
                (``space.to_tensor(configs)``, faster for large pools). The answer is
                a pool configuration neither evaluated nor pending: a random one
                during the initial design, else the one of highest acquisition value
                (scored in chunks: pools of 10^5 configurations fit in memory).

        Raises:
            ValueError: If ``candidates`` is empty, not of this space, or holds
                nothing that is neither evaluated nor pending; if ``n`` is below 1.
            TypeError: If ``candidates`` is not a pool (a number, a dict).
            ConfigurationError: If ``n > 1`` and the strategy cannot take pending
                configurations into account (it names the strategy).

        Example:
            >>> from treebo.test_functions import Jenatton
            >>> problem = Jenatton()
            >>> opt = TreeOptimizer(problem.space, seed=0)
            >>> batch = opt.ask(4)  # four distinct configurations, all pending
            >>> len(batch), len(opt.pending)
            (4, 4)
            >>> for params in batch:
            ...     trial = opt.tell(params, problem.objective(params))
        """
        if n is not None and (isinstance(n, bool) or not isinstance(n, Integral)):
            if candidates is not None:
                raise TypeError(f"n must be an int, got {type(n).__name__}.")
            n, candidates = None, n  # ask(pool): the pool, as before ask(n)
        if n is None:
            return self._ask_one(candidates)
        n = check_count(n, "n", 1)
        if n > 1 and not self.strategy.handles_pending:
            raise ConfigurationError(
                f"n: strategy={self.strategy.name!r} cannot choose {n} "
                "configurations at once (it does not take pending ones into account); "
                "ask one at a time, or use a strategy that batches (e.g. 'add_tree')."
            )
        if candidates is not None and not isinstance(candidates, Tensor):
            candidates = self._encode(candidates)  # once for the batch, not n times
        return [self._ask_one(candidates) for _ in range(n)]

    def _ask_one(
        self, candidates: Sequence[Mapping[str, Any]] | Tensor | None
    ) -> dict[str, Any]:
        """One configuration of [`ask()`][treebo.loop.optimizer.TreeOptimizer.ask]."""
        n_done = len(self.history) + len(self._pending)
        fresh = None if candidates is None else self._fresh(candidates)
        seconds = 0.0
        if n_done < self.n_initial:
            if fresh is None:
                params, kind = self._initial_design[n_done], "initial"
            else:
                params, kind = self._random_row(fresh, n_done), "initial"
        elif not any(t.status == "ok" for t in self.history):
            # Nothing succeeded yet: keep exploring at random.
            params, kind = self._random(n_done, fresh), "initial"
        else:
            t0 = time.perf_counter()
            try:
                obs = self.observations()
                # Whatever a proposal draws from torch's global generator (a fit's
                # restarts from the priors, say) follows the run's seed, not the
                # process's: the same seed gives the same run in any process, in
                # lockstep, and after a resume. The caller's CPU generator is kept.
                token = current_proposal.set(n_done)
                try:
                    with manual_seed(obs.seed):
                        if fresh is None:
                            proposal = self.strategy.propose(obs)
                        else:
                            pool = fresh.to(self.device, self.dtype)
                            proposal = self.strategy.propose_from(obs, pool)
                finally:
                    current_proposal.reset(token)
                self.last_timings = dict(proposal.timings)
                candidate = proposal.candidate.detach().cpu().to(torch.float64)
                if not bool(candidate.isfinite().all()):
                    raise ModelFittingError("the proposal is not finite")
                params, kind = self.space.to_dict(candidate), proposal.kind
            except ModelFittingError as err:
                # Keep the run alive: a random proposal beats a crash.
                warnings.warn(
                    f"treebo: the model failed ({err}); proposing a random "
                    "configuration instead.",
                    RuntimeWarning,
                    stacklevel=2,
                )
                params, kind = self._random(n_done, fresh), "random"
            seconds = time.perf_counter() - t0
            self._journal_state()
        # The encoding of the dict (not the candidate): what tell() will see.
        x = self.space.to_tensor([params])[0]
        self._pending.append(
            {"params": params, "x": x, "kind": kind, "seconds": seconds}
        )
        return dict(params)

    def tell(
        self,
        params: Mapping[str, Any],
        value: float | None | BaseException,
        eval_seconds: float = 0.0,
        sem: float | None = None,
    ) -> Trial:
        """Record the outcome of evaluating ``params``.

        Args:
            params: A configuration (normally one returned by
                [`ask()`][treebo.loop.optimizer.TreeOptimizer.ask]; one that differs
                from it by float round-off counts as it).
            value: The objective value, a real number. Anything else (``None``,
                NaN, an infinity, a string, a bool, an exception) records a
                failed trial with the reason in its ``error``.
            eval_seconds: How long the evaluation took.
            sem: The standard error of ``value``, for a run with known noise
                (``noise=<variance>``), in the objective's units; default: that
                variance.

        Raises:
            ConfigurationError: If ``sem`` is not a number ``>= 0``, or the run's
                noise is not known.
        """
        sem = validate_sem(sem, self.noise)
        # The common case, the dict that ask() returned, is journaled first:
        # a kill right after the evaluation must find it on disk.
        pending = next((p for p in self._pending if p["params"] == params), None)
        if pending is not None:
            params, x = pending["params"], pending["x"]
        else:
            params = self.space.validate(params)
            x = self.space.to_tensor([params])[0]
            pending = self._match_pending(x)
        if pending is not None:
            self._pending.remove(pending)
        value, error = parse_outcome(value)
        trial = Trial(
            index=len(self.history),
            params=dict(params),
            value=value,
            status="ok" if error is None else "failed",
            error=error,
            kind=pending["kind"] if pending else "user",
            proposal_seconds=pending["seconds"] if pending else 0.0,
            eval_seconds=_seconds(eval_seconds),
            sem=sem,
        )
        if self._journal is not None:
            self._journal.append_trial(self.space, trial)
        self.history.append(trial, x)
        if error is not None:
            self._warn_if_nothing_succeeded()
        log_trial(trial, self.best_trial)
        return trial

    def _journal_state(self) -> None:
        """Append the strategy's state to the journal if it changed."""
        if self._journal is None:
            return
        state = self.strategy.state_dict()
        if state != self._journaled_state:
            self._journal.append_state(state)
            self._journaled_state = state

    def _warn_if_nothing_succeeded(self) -> None:
        if self._warned_failures or self.best_trial is not None:
            return
        failed = [t for t in self.history if t.status == "failed"]
        if len(failed) >= FAILURES_BEFORE_WARNING:
            self._warned_failures = True
            warnings.warn(
                f"treebo: the first {len(failed)} evaluations all failed (the "
                f"latest: {failed[-1].error}); check the objective.",
                RuntimeWarning,
                stacklevel=3,
            )

    def _match_pending(self, x: Tensor) -> dict[str, Any] | None:
        """The pending entry nearest to the encoding ``x``, if it is within
        [`PENDING_MATCH_TOL`][treebo.loop.optimizer.PENDING_MATCH_TOL] of each range
        (round-off)."""
        if not self._pending:
            return None
        width = (self.space.bounds[1] - self.space.bounds[0]).clamp_min(1e-300)
        X = torch.stack([p["x"] for p in self._pending])
        gap = ((X - x).abs() / width).amax(-1)
        best = int(gap.argmin())
        return self._pending[best] if float(gap[best]) <= PENDING_MATCH_TOL else None

    def close(self) -> None:
        """Close the checkpoint and release its lock, so that another
        optimizer may open it (also on leaving a ``with`` block; a process
        that ends releases it too). Telling after closing reopens nothing:
        later trials are no longer journaled."""
        if self._journal is not None:
            self._journal.release()
            self._journal = None

    def __enter__(self) -> TreeOptimizer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def pending(self) -> list[dict[str, Any]]:
        """Configurations asked for and not yet told."""
        return [dict(p["params"]) for p in self._pending]

    @property
    def best_trial(self) -> Trial | None:
        """The best successful trial, or ``None``."""
        return self.history.best(self.maximize)

    def result(self) -> OptimizationResult:
        """The recommended configuration, its value and the history.

        For a deterministic objective (declared with ``noise="deterministic"``, or
        inferred: the fitted noise at its floor) the recommendation is the best trial
        and ``best_value`` its value. Otherwise it is the
        evaluated configuration whose posterior mean is best (as BoTorch and Ax
        recommend: the best observed value of a noisy objective is partly luck),
        ``best_value`` is that posterior mean, the model's estimate of its true
        value, and ``best_value_sd`` its posterior standard deviation;
        ``recommended_by`` says which. ``best_observed_value`` and
        ``best_observed_params`` are the best observation either way. Strategies
        without a model to predict with recommend the best trial. With a checkpoint,
        the recommendation is journaled:
        [`read_checkpoint()`][treebo.loop.checkpoint.read_checkpoint] returns it too.

        Warns if trials were told and none succeeded (``best_params`` is then
        ``None``).
        """
        best = self.best_trial
        if best is None and len(self.history):
            errors = sorted({str(t.error) for t in self.history})
            warnings.warn(
                f"treebo: none of the {len(self.history)} evaluations succeeded; "
                f"errors: {'; '.join(errors[:3])}"
                + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""),
                RuntimeWarning,
                stacklevel=2,
            )
        recommended = None
        if best is not None and self.noise != "deterministic":
            scores = self.history.values if self.maximize else -self.history.values
            obs = self.observations()
            with manual_seed(obs.seed):  # as a proposal's fit (see ask())
                recommended = recommend(self.strategy, obs, scores)
        journaled = (len(self.history), recommended)
        if recommended is not None and self._journal is not None:
            if journaled != self._journaled_recommendation:  # once per change
                self._journal.append_recommendation(*journaled)
                self._journaled_recommendation = journaled
        return result_of(self.history.as_list(), self.maximize, recommended)

    # ----------------------------------------------------------- helpers
    def _seed_for(self, n: int) -> int:
        return (0 if self.seed is None else self.seed) * 100_003 + n

    def _random(self, n: int, fresh: Tensor | None = None) -> dict[str, Any]:
        if fresh is not None:
            return self._random_row(fresh, n)
        return self.space.to_dicts(self.space.sample(1, seed=self._seed_for(n)))[0]

    def _random_row(self, pool: Tensor, n: int) -> dict[str, Any]:
        generator = torch.Generator().manual_seed(self._seed_for(n))
        index = int(torch.randint(pool.shape[0], (1,), generator=generator))
        return self.space.to_dict(pool[index])

    def _fresh(self, candidates: Sequence[Mapping[str, Any]] | Tensor) -> Tensor:
        """The rows of the pool that are neither evaluated nor pending."""
        seen = [self.history.X] + [p["x"].unsqueeze(0) for p in self._pending]
        return fresh_candidates(self.space, self._encode(candidates), torch.cat(seen))

    def _encode(self, candidates: Sequence[Mapping[str, Any]] | Tensor) -> Tensor:
        """``encode_candidates()``, checked once per tensor pool: the same tensor,
        unchanged since (its version counter), is not checked again."""
        cached = self._encoded_pool
        if (
            cached is not None
            and candidates is cached[0]
            and candidates._version == cached[1]
        ):
            return cached[2]
        pool = encode_candidates(self.space, candidates)
        if isinstance(candidates, Tensor):
            self._encoded_pool = (candidates, candidates._version, pool)
        return pool

    def training_data(self) -> tuple[Tensor, Tensor]:
        """Encoded inputs and standardized scores to maximize (``n x d``, ``n x 1``).

        Scores are ``value`` when maximizing and ``-value`` when minimizing, with
        far-out bad scores raised to the bulk's lower fence and then standardized over
        the successful trials (zero mean, unit variance; see
        [`standardize_scores()`][treebo.loop.outcomes.standardize_scores]), so that
        ``c * f + b`` gives the same proposals as ``f`` for any ``c > 0``; failed trials
        get the worst score.
        """
        values = self.history.values
        y = standardize_scores(values if self.maximize else -values)
        return (
            self.history.X.to(self.device, self.dtype),
            y.unsqueeze(-1).to(self.device, self.dtype),
        )

    def observations(self) -> Observations:
        """What the strategy sees for the next proposal."""
        X, y = self.training_data()
        pending = (
            torch.stack([p["x"] for p in self._pending])
            if self._pending
            else torch.empty(0, self.space.dim, dtype=torch.float64)
        )
        return Observations(
            space=self.space,
            X=X,
            y=y,
            failed=self.history.values.isnan().to(self.device),
            kinds=self.history.kinds,
            X_pending=pending.to(self.device, self.dtype),
            seed=self._seed_for(len(self.history)),
            n_initial=self.n_initial,
            noise=self.noise if isinstance(self.noise, str) else "known",
            yvar=None
            if isinstance(self.noise, str)
            else standardized_noise(
                self.history.values if self.maximize else -self.history.values,
                self.noise,
                [t.sem for t in self.history],
            ).to(self.device, self.dtype),
        )

    @property
    def last_model(self) -> Any:
        """The strategy's last global model (``None`` before the first fit).

        It models the standardized scores of
        [`training_data()`][treebo.loop.optimizer.TreeOptimizer.training_data], not the
        raw values.
        """
        return self.strategy.last_model


def _seconds(value: Any) -> float:
    try:
        return as_real_number(value)
    except TypeError as err:
        raise TypeError(f"eval_seconds must be a number, got {err}.") from None
