r"""Ask/tell Bayesian optimization on a :class:`~treebo.space.TreeSpace`.

:class:`TreeOptimizer` is the loop's core: the history, the pending
configurations, the initial design, failed evaluations and checkpoints. What
to evaluate next is decided by a strategy (:mod:`treebo.strategies`), picked
by name with ``model=``.

Example:
    >>> from treebo import TreeOptimizer
    >>> from treebo.test_functions import Jenatton
    >>> problem = Jenatton()
    >>> opt = TreeOptimizer(problem.space, seed=0)
    >>> for _ in range(12):
    ...     params = opt.ask()
    ...     trial = opt.tell(params, problem.objective(params))
    >>> opt.best_trial.value < 1.0
    True
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from botorch.exceptions import ModelFittingError
from torch import Tensor

import treebo.strategies  # noqa: F401  (registers the built-in strategies)
from treebo.loop.checkpoint import (
    Checkpoint,
    read_checkpoint,
    run_identity,
    write_checkpoint,
)
from treebo.loop.design import default_initial_size, initial_design
from treebo.loop.history import History, OptimizationResult, Trial
from treebo.space import TreeSpace
from treebo.strategies.base import Observations, Strategy, make_strategy

#: A told configuration matches a pending one if its encoding differs by at
#: most this fraction of each column's range (round-off in user code, e.g. a
#: float32 round trip).
PENDING_MATCH_TOL = 1e-6


class TreeOptimizer:
    """Ask/tell Bayesian optimization with dicts in and out.

    Args:
        space: The search space.
        model: The strategy: a registered name (``"add_tree"``, the default:
            LogEI on an :class:`~treebo.models.AddTreeGP`; ``"add_tree_ucb"``:
            Add-Tree-GP-UCB) or a :class:`~treebo.strategies.Strategy`.
        options: The strategy's options (e.g.
            :class:`~treebo.strategies.AddTreeOptions`); default its defaults.
            Only with a name for ``model``.
        maximize: Maximize instead of minimize the objective.
        n_initial: Size of the initial design (default: number of paths + 1,
            between 5 and 20).
        seed: Seed of the initial design and the optimizers.
        checkpoint: JSON file written after every evaluation; if it exists,
            the run resumes from it (it must have the same settings).
        device: Device of the models and optimizers (default CPU).
        dtype: Floating point type of the models (default float64).

    Example:
        >>> opt = TreeOptimizer(space, seed=0, checkpoint="run.json")
        >>> params = opt.ask()
        >>> opt.tell(params, objective(params))
    """

    def __init__(
        self,
        space: TreeSpace,
        *,
        model: str | Strategy = "add_tree",
        options: Any | None = None,
        maximize: bool = False,
        n_initial: int | None = None,
        seed: int | None = None,
        checkpoint: str | os.PathLike | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        if not isinstance(space, TreeSpace):
            raise TypeError(f"space must be a TreeSpace, got {type(space).__name__}.")
        if isinstance(model, Strategy):
            if options is not None:
                raise ValueError(
                    "options go with a model name; a Strategy carries its own."
                )
            self.strategy = model
        elif isinstance(model, str):
            self.strategy = make_strategy(model, options, device=device, dtype=dtype)
        else:
            raise TypeError(
                f"model must be a name or a Strategy, got {type(model).__name__}."
            )
        if n_initial is None:
            n_initial = default_initial_size(space)
        if (
            isinstance(n_initial, bool)
            or not isinstance(n_initial, int)
            or n_initial < 1
        ):
            raise ValueError(f"n_initial must be an integer >= 1, got {n_initial!r}.")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"seed must be an integer or None, got {seed!r}.")
        self.space = space
        self.maximize = bool(maximize)
        self.n_initial = n_initial
        self.seed = seed
        self.device = self.strategy.device
        self.dtype = self.strategy.dtype
        self.checkpoint = Path(checkpoint) if checkpoint is not None else None
        self.history = History(space)
        self._pending: list[dict[str, Any]] = []
        self._initial_design = initial_design(space, n_initial, seed)
        self._identity = run_identity(
            space,
            self.strategy.name,
            self.strategy.options_dict(),
            seed,
            self.maximize,
            n_initial,
        )
        if self.checkpoint is not None and self.checkpoint.exists():
            saved = read_checkpoint(self.checkpoint, self._identity)
            self.history.extend(saved.history)
            self.strategy.load_state_dict(saved.strategy_state)

    # ---------------------------------------------------------- ask/tell
    def ask(self) -> dict[str, Any]:
        """The next configuration to evaluate (a dict of active parameters).

        Parallel or asynchronous workers may call ``ask`` again before telling
        earlier results: configurations asked for and not yet told are
        pending, and the strategy treats them as observed at the model's
        predicted value, so the workers get different configurations.
        """
        n_done = len(self.history) + len(self._pending)
        seconds = 0.0
        if n_done < self.n_initial:
            params, kind = self._initial_design[n_done], "initial"
        elif not any(t.status == "ok" for t in self.history):
            # Nothing succeeded yet: keep exploring at random.
            params, kind = self._random(n_done), "initial"
        else:
            t0 = time.perf_counter()
            try:
                proposal = self.strategy.propose(self.observations())
                candidate = proposal.candidate.detach().cpu().to(torch.float64)
                params, kind = self.space.to_dict(candidate), proposal.kind
            except ModelFittingError as err:
                # Keep the run alive: a random proposal beats a crash.
                warnings.warn(
                    f"treebo: model fitting failed ({err}); proposing a random "
                    "configuration instead.",
                    RuntimeWarning,
                    stacklevel=2,
                )
                params, kind = self._random(n_done), "random"
            seconds = time.perf_counter() - t0
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
    ) -> Trial:
        """Record the outcome of evaluating ``params``.

        Args:
            params: A configuration (normally one returned by :meth:`ask`; one
                that differs from it by float round-off counts as it).
            value: The objective value; ``None``, NaN, inf or an exception
                records a failure.
            eval_seconds: How long the evaluation took.
        """
        self.space.validate(params)
        x = self.space.to_tensor([params])[0]
        pending = self._match_pending(dict(params), x)
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
        self.history.append(trial, x)
        if self.checkpoint is not None:
            write_checkpoint(
                self.checkpoint,
                Checkpoint(
                    self._identity, self.history.as_list(), self.strategy.state_dict()
                ),
            )
        return trial

    def _match_pending(
        self, params: dict[str, Any], x: Tensor
    ) -> dict[str, Any] | None:
        """The pending entry ``params`` answers: an exact match, else the
        nearest one within :data:`PENDING_MATCH_TOL` of each range."""
        exact = next((p for p in self._pending if p["params"] == params), None)
        if exact is not None or not self._pending:
            return exact
        width = (self.space.bounds[1] - self.space.bounds[0]).clamp_min(1e-300)
        X = torch.stack([p["x"] for p in self._pending])
        gap = ((X - x).abs() / width).amax(-1)
        best = int(gap.argmin())
        return self._pending[best] if float(gap[best]) <= PENDING_MATCH_TOL else None

    @property
    def pending(self) -> list[dict[str, Any]]:
        """Configurations asked for and not yet told."""
        return [dict(p["params"]) for p in self._pending]

    @property
    def best_trial(self) -> Trial | None:
        """The best successful trial, or ``None``."""
        return self.history.best(self.maximize)

    def result(self) -> OptimizationResult:
        """The best configuration, its value and the history."""
        best = self.best_trial
        return OptimizationResult(
            best_params=None if best is None else dict(best.params),
            best_value=None if best is None else best.value,
            history=self.history.as_list(),
        )

    # ----------------------------------------------------------- helpers
    def _seed_for(self, n: int) -> int:
        return (0 if self.seed is None else self.seed) * 100_003 + n

    def _random(self, n: int) -> dict[str, Any]:
        return self.space.to_dicts(self.space.sample(1, seed=self._seed_for(n)))[0]

    def training_data(self) -> tuple[Tensor, Tensor]:
        """Encoded inputs and scores to maximize (``n x d``, ``n x 1``).

        Scores are ``value`` when maximizing and ``-value`` when minimizing;
        failed points get the worst successful score.
        """
        values = self.history.values
        y = values if self.maximize else -values
        ok = ~y.isnan()
        if bool(ok.any()):
            y = torch.where(ok, y, y[ok].min())
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
        )

    @property
    def last_model(self) -> Any:
        """The strategy's last global model (``None`` before the first fit)."""
        return getattr(self.strategy, "last_model", None)
