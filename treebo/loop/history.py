"""The loop's record of evaluations: [`Trial`][treebo.loop.history.Trial],
[`History`][treebo.loop.history.History] and
[`OptimizationResult`][treebo.loop.history.OptimizationResult]."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

import torch
from torch import Tensor

from treebo.space import TreeSpace

if TYPE_CHECKING:
    from treebo.loop.recommendation import Recommendation

#: Trial kinds written by the loop itself; strategies add their own (for the
#: Add-Tree strategies: ``"bo"``, ``"local"``, ``"away"`` and ``"explore"``).
CORE_KINDS = ("initial", "random", "user")


@dataclass
class Trial:
    """One evaluation.

    Attributes:
        index: Position in the history (0-based).
        params: The configuration evaluated (active parameters only).
        value: The objective value, or ``None`` if the evaluation failed.
        status: ``"ok"`` or ``"failed"``.
        error: The error message of a failed evaluation.
        kind: Who proposed it: ``"initial"`` (initial design), ``"random"``
            (no model could be fitted), ``"user"`` (told without asking), or a
            strategy's own kind (the Add-Tree strategies: ``"bo"`` for the
            global model, ``"local"`` for a local step around the incumbent,
            ``"away"`` for a proposal moved off a resolved basin, ``"explore"``
            for the proposal after a tie with the best score).
        proposal_seconds: Time spent proposing it.
        eval_seconds: Time the objective took.
        sem: The standard error told with the value (runs with known noise), or
            ``None``.
    """

    index: int
    params: dict[str, Any]
    value: float | None
    status: str = "ok"
    error: str | None = None
    kind: str = "bo"
    proposal_seconds: float = 0.0
    eval_seconds: float = 0.0
    sem: float | None = None


@dataclass
class OptimizationResult:
    """What [`minimize()`][treebo.loop.run.minimize] returns.

    Attributes:
        best_params: The recommended configuration, one of those evaluated
            (``None`` if every evaluation failed): for a deterministic objective the
            best one, otherwise the one whose posterior mean is best (see
            [`TreeOptimizer.result()`][treebo.loop.optimizer.TreeOptimizer.result]).
        best_value: Its value: the observed one for a deterministic objective,
            otherwise the model's prediction of its true value.
        history: Every [`Trial`][treebo.loop.history.Trial], failures included.
        best_observed_value: The best value observed (``None`` if every evaluation
            failed).
        maximize: Whether the run maximized.
        best_value_sd: The posterior standard deviation of the recommendation's true
            value where ``best_value`` is a prediction (``recommended_by ==
            "model"``), else ``None``.
        best_observed_params: The configuration of ``best_observed_value``.
        recommended_by: ``"model"`` (the configuration of best posterior mean) or
            ``"observation"`` (the best observed configuration: a deterministic
            objective, a strategy without a model, or a checkpoint whose run stopped
            before recommending).
    """

    best_params: dict[str, Any] | None
    best_value: float | None
    history: list[Trial] = field(default_factory=list)
    best_observed_value: float | None = None
    maximize: bool = False
    best_value_sd: float | None = None
    best_observed_params: dict[str, Any] | None = None
    recommended_by: str = "observation"

    def describe(self) -> str:
        """The recommendation and the best observation in words, as ``treebo run``
        and ``treebo show`` print them.

        Example:
            >>> trials = [Trial(0, {"x": 0.5}, 1.0), Trial(1, {"x": 0.2}, 0.8)]
            >>> print(OptimizationResult({"x": 0.2}, 0.8, trials, 0.8).describe())
            recommended {'x': 0.2}: value 0.8 (the best observation)
        """
        if self.best_params is None:
            return "no recommendation: no evaluation succeeded"
        if self.recommended_by == "model":
            sd = "" if self.best_value_sd is None else f" ± {self.best_value_sd:.4g}"
            lines = [
                f"recommended {self.best_params}: predicted value "
                f"{self.best_value:.6g}{sd} (the model's posterior mean and sd)",
                f"best observed {self.best_observed_params}: value "
                f"{self.best_observed_value}",
            ]
            return "\n".join(lines)
        return (
            f"recommended {self.best_params}: value {self.best_value} "
            "(the best observation)"
        )

    @property
    def values(self) -> list[float | None]:
        """The objective value of every trial (``None`` for failures)."""
        return [t.value for t in self.history]

    def trials_dataframe(self) -> Any:
        """The trials as a pandas ``DataFrame``, one row per trial (as Optuna's
        ``Study.trials_dataframe()``).

        Columns: ``number``, ``value`` (NaN for a failure), ``status``, ``kind``,
        ``params_<name>`` for every parameter that any trial set (NaN or ``None`` where
        inactive), ``proposal_seconds``, ``eval_seconds``, ``sem`` and ``error``.

        Example:
            >>> result = OptimizationResult(
            ...     {"x": 0.5}, 1.0, [Trial(0, {"x": 0.5}, 1.0), Trial(1, {}, None)]
            ... )
            >>> result.trials_dataframe()[["number", "value", "params_x"]]
               number  value  params_x
            0       0    1.0       0.5
            1       1    NaN       NaN
        """
        try:
            import pandas as pd
        except ImportError as err:  # pragma: no cover - exercised without pandas
            raise ImportError(
                "trials_dataframe() needs pandas: pip install 'treebo[pandas]'."
            ) from err

        names = list(dict.fromkeys(n for t in self.history for n in t.params))
        rows = [
            {
                "number": t.index,
                "value": math.nan if t.value is None else t.value,
                "status": t.status,
                "kind": t.kind,
                **{f"params_{n}": t.params.get(n) for n in names},
                "proposal_seconds": t.proposal_seconds,
                "eval_seconds": t.eval_seconds,
                "sem": t.sem,
                "error": t.error,
            }
            for t in self.history
        ]
        columns = ["number", "value", "status", "kind"]
        columns += [f"params_{n}" for n in names]
        columns += ["proposal_seconds", "eval_seconds", "sem", "error"]
        return pd.DataFrame(rows, columns=columns)

    def best_so_far(self, maximize: bool | None = None) -> list[float]:
        """Running best value after each evaluation (NaN before the first success),
        in the run's direction unless ``maximize`` is given."""
        maximize = self.maximize if maximize is None else maximize
        out, best = [], math.nan
        for t in self.history:
            if t.value is not None and (
                math.isnan(best) or (t.value > best if maximize else t.value < best)
            ):
                best = t.value
            out.append(best)
        return out


class History(Sequence[Trial]):
    r"""The trials of a run, with their tensor encoding kept alongside.

    Each [`append()`][treebo.loop.history.History.append] encodes the new configuration
    once and writes it into a buffer that doubles when full, so reading the ``n x d``
    inputs costs no re-encoding (amortized $O(d)$ per trial).

    Args:
        space: The search space the configurations belong to.

    Example:
        >>> from treebo.space import Real, TreeSpace, Vertex
        >>> history = History(TreeSpace(Vertex([Real("x", 0, 1)])))
        >>> history.append(Trial(0, {"x": 0.5}, 1.2))
        >>> history.X.shape  # n x d
        torch.Size([1, 1])
    """

    def __init__(self, space: TreeSpace) -> None:
        self.space = space
        self._trials: list[Trial] = []
        self._X = torch.empty(8, space.dim, dtype=torch.float64)
        self._values = torch.empty(8, dtype=torch.float64)

    @overload
    def __getitem__(self, index: int) -> Trial: ...

    @overload
    def __getitem__(self, index: slice) -> list[Trial]: ...

    def __getitem__(self, index: int | slice) -> Trial | list[Trial]:
        return self._trials[index]

    def __len__(self) -> int:
        return len(self._trials)

    def __iter__(self) -> Iterator[Trial]:
        return iter(self._trials)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, History):
            return self._trials == other._trials
        return isinstance(other, list) and self._trials == other

    def __repr__(self) -> str:
        return f"History({self._trials!r})"

    def append(self, trial: Trial, x: Tensor | None = None) -> None:
        """Add ``trial``; ``x`` (``d``) is its encoding if already known."""
        n = len(self._trials)
        if n == self._X.shape[0]:
            self._X = torch.cat([self._X, torch.empty_like(self._X)])
            self._values = torch.cat([self._values, torch.empty_like(self._values)])
        if x is None:
            x = self.space.to_tensor([trial.params])[0]
        self._X[n] = x
        self._values[n] = math.nan if trial.value is None else trial.value
        self._trials.append(trial)

    def extend(self, trials: Sequence[Trial]) -> None:
        """Add several trials, encoded in one call."""
        if not trials:
            return
        X = self.space.to_tensor([t.params for t in trials])
        for trial, x in zip(trials, X, strict=True):
            self.append(trial, x)

    @property
    def X(self) -> Tensor:
        """``n x d`` float64 encoding of every trial's configuration (a view)."""
        return self._X[: len(self._trials)]

    @property
    def values(self) -> Tensor:
        """``n`` float64 objective values, NaN for failures (a view)."""
        return self._values[: len(self._trials)]

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every trial's ``kind``."""
        return tuple(t.kind for t in self._trials)

    def best(self, maximize: bool) -> Trial | None:
        """The best successful trial (the first of equals), or ``None``."""
        values = self.values
        ok = ~values.isnan()
        if not bool(ok.any()):
            return None
        scores = torch.where(ok, values if maximize else -values, -math.inf)
        return self._trials[int(scores.argmax())]

    def as_list(self) -> list[Trial]:
        """A plain list of the trials."""
        return list(self._trials)


def result_of(
    trials: list[Trial], maximize: bool, recommended: Recommendation | None = None
) -> OptimizationResult:
    """The [`OptimizationResult`][treebo.loop.history.OptimizationResult] of
    ``trials``: the model's ``recommended`` pick (a
    [`Recommendation`][treebo.loop.recommendation.Recommendation] of scores, which
    grow with the objective where ``maximize``) where given, else the best
    observation (the first of equals)."""
    ok = [t for t in trials if t.value is not None]
    better = max if maximize else min
    best = better(ok, key=lambda t: t.value) if ok else None
    result = OptimizationResult(
        best_params=None if best is None else dict(best.params),
        best_value=None if best is None else best.value,
        history=list(trials),
        best_observed_value=None if best is None else best.value,
        maximize=maximize,
        best_observed_params=None if best is None else dict(best.params),
    )
    if recommended is not None and best is not None:
        result.best_params = dict(trials[recommended.index].params)
        result.best_value = recommended.score if maximize else -recommended.score
        result.best_value_sd = recommended.sd
        result.recommended_by = "model"
    return result
