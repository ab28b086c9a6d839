"""One-call optimization: [`minimize()`][treebo.loop.run.minimize], sequential or with
parallel workers."""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from typing import Any

from torch import Tensor

from treebo.loop.candidates import encode_candidates
from treebo.loop.fingerprint import objective_fingerprint, pool_fingerprint
from treebo.loop.history import OptimizationResult, Trial
from treebo.loop.log import get_logger
from treebo.loop.optimizer import TreeOptimizer
from treebo.space import TreeSpace
from treebo.strategies.base import Strategy, resolve_strategy
from treebo.strategies.validation import check_count


def _progress_bar(total: int, done: int) -> Any:
    """A tqdm bar over the budget, on stderr, starting at ``done``."""
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=done, desc="treebo", unit="trial", file=sys.stderr)


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
    strategy: str | Strategy | None = None,
    maximize: bool = False,
    n_initial: int | None = None,
    noise: str | float = "infer",
    checkpoint: str | os.PathLike | None = None,
    n_workers: int = 1,
    executor: Executor | None = None,
    callback: Callable[[Trial], None] | None = None,
    progress: bool | None = None,
    candidates: Sequence[Mapping[str, Any]] | Tensor | None = None,
    batch_size: int = 1,
    model: Any = None,
) -> OptimizationResult:
    """Minimize (or maximize) ``objective`` over ``space`` with ``budget`` evaluations.

    With ``n_workers > 1`` up to that many evaluations run at once: whenever one
    finishes, its result is told and a new configuration is asked for, with the ones
    still running treated as pending (see
    [`TreeOptimizer.ask()`][treebo.loop.optimizer.TreeOptimizer.ask]). The run then
    depends on the order in which evaluations finish, so a seed no longer fixes it.

    Args:
        objective: Takes a dict of active parameter values, returns a float.
            Exceptions and NaN/inf results are recorded as failed trials; a result
            of several values (a tuple, a dict, an array) is recorded as failed and
            stops the run with a ``TypeError`` (several objectives: the Ax route).
        space: The search space.
        budget: Total number of evaluations (a resumed run counts the ones in
            its checkpoint).
        seed: Seed for reproducibility.
        strategy: What proposes the next configuration: a name (``"add_tree"``, the
            default, ``"add_tree_ucb"``, ``"tree_additive"``, ``"treed"``,
            ``"jenatton_tree"``, ``"jenatton_tree_nonlinear"``, ``"independent"``,
            ``"bktf"``) or a [`Strategy`][treebo.strategies.base.Strategy] with its
            options (see [`TreeOptimizer`][treebo.loop.optimizer.TreeOptimizer]).
        maximize: Maximize instead.
        n_initial: Size of the initial design (see
            [`TreeOptimizer`][treebo.loop.optimizer.TreeOptimizer]).
        noise: ``"infer"`` (default), ``"deterministic"`` or the noise variance of
            every evaluation (see
            [`TreeOptimizer`][treebo.loop.optimizer.TreeOptimizer]); it decides what
            the result recommends.
        checkpoint: Journal file (JSON lines) each evaluation is appended to
            as soon as it returns; resumed from if it exists (with the same
            settings, the same ``candidates`` in any row order and the same
            objective: its name, its code and what it reads
            ([`treebo.loop.fingerprint`][treebo.loop.fingerprint]; an edited
            objective is refused, start afresh with another path). Evaluations
            still running when a run is killed are not in it (a resumed run
            proposes again).
        n_workers: How many evaluations may run at once.
        executor: A `concurrent.futures.Executor` to run the evaluations in; it is not
            shut down here. A [`ProcessExecutor`][treebo.loop.executors.ProcessExecutor]
            runs each evaluation in a process of its own and ends the ones that run past
            its ``timeout`` (recorded as failed trials); a ``ProcessPoolExecutor`` needs
            a picklable ``objective``. Default: the calling thread when
            ``n_workers == 1``, else a ``ThreadPoolExecutor`` with ``n_workers`` threads
            (suits objectives that wait on a subprocess, a GPU or a remote job).
        callback: Called with each new [`Trial`][treebo.loop.history.Trial].
        progress: Show a progress bar (tqdm) with the best value so far on stderr;
            default: where stderr is a terminal. Each finished trial is also logged at
            INFO ([`set_verbosity()`][treebo.loop.log.set_verbosity]).
        candidates: Evaluate only configurations of this pool (a tabular benchmark, a
            pre-computed design, the settings a lab can run), each at most once: a list
            of configurations or their ``m x d`` encoding
            (``space.to_tensor(configs)``); see
            [`TreeOptimizer.ask()`][treebo.loop.optimizer.TreeOptimizer.ask].
        batch_size: Evaluate in synchronous batches of this many configurations,
            chosen jointly
            ([`TreeOptimizer.ask(n)`][treebo.loop.optimizer.TreeOptimizer.ask]) and
            run at once: on ``executor``, else on ``batch_size`` threads. Each
            batch is told in the order it was asked (a seed fixes the run). Not with
            ``n_workers > 1`` (asynchronous workers: each starts when one ends).
        model: Deprecated alias of ``strategy`` (it also takes a strategy's options
            object); removed in treebo 0.3.

    Returns:
        An [`OptimizationResult`][treebo.loop.history.OptimizationResult].

    Example:
        >>> from treebo.test_functions import Jenatton
        >>> problem = Jenatton()
        >>> result = minimize(problem.objective, problem.space, budget=10, seed=0)
        >>> result.best_value < 1.0
        True
    """
    if not callable(objective):
        raise TypeError("objective must be callable.")
    budget = check_count(budget, "budget", 1)
    n_workers = check_count(n_workers, "n_workers", 1)
    batch_size = check_count(batch_size, "batch_size", 1)
    if batch_size > 1 and n_workers > 1:
        raise ValueError(
            "batch_size and n_workers: give one (batches of batch_size start together; "
            "n_workers keeps that many running, each replaced when it ends)."
        )
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {callback!r}.")
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(
            "executor must be a concurrent.futures.Executor, got "
            f"{type(executor).__name__}."
        )
    if not isinstance(space, TreeSpace):
        raise TypeError(f"space must be a TreeSpace, got {type(space).__name__}.")
    choices = None if candidates is None else encode_candidates(space, candidates)
    if choices is not None and budget > choices.shape[0]:
        raise ValueError(
            f"budget ({budget}) exceeds the {choices.shape[0]} configurations in "
            "candidates (each is evaluated at most once)."
        )
    opt = TreeOptimizer(
        space,
        strategy=resolve_strategy(strategy, model),
        maximize=maximize,
        n_initial=n_initial,
        seed=seed,
        noise=noise,
        checkpoint=checkpoint,
        fingerprint=None if checkpoint is None else _fingerprint(objective, choices),
    )

    if checkpoint is not None and len(opt.history) >= budget:
        warnings.warn(
            f"checkpoint {os.fspath(checkpoint)!r} already holds "
            f"{len(opt.history)} evaluations (budget {budget}): nothing was "
            "evaluated, the result is the checkpoint's. Raise the budget to go "
            "on, or use another checkpoint file for a new run.",
            stacklevel=2,
        )

    if progress is None:
        progress = sys.stderr.isatty()
    bar = _progress_bar(budget, len(opt.history)) if progress else None

    def record(params: dict[str, Any], value: Any, seconds: float) -> None:
        trial = opt.tell(params, value, eval_seconds=seconds)
        if callback is not None:
            callback(trial)
        if bar is not None:
            best = opt.best_trial
            bar.set_postfix_str("best=-" if best is None else f"best={best.value:.6g}")
            bar.update(1)
        if _several_values(value):  # every later trial would fail the same way
            raise TypeError(
                f"objective returned a {type(value).__name__} of several values; "
                "minimize() optimizes one objective, a real number (this trial is "
                "recorded as failed). For several objectives or outcome "
                "constraints, run the Add-Tree model in Ax: "
                "treebo.integrations.ax.add_tree_generation_strategy()."
            )

    with contextlib.ExitStack() as stack:
        stack.callback(opt.close)
        if bar is not None:
            from tqdm.contrib.logging import logging_redirect_tqdm

            stack.callback(bar.close)
            stack.enter_context(logging_redirect_tqdm(loggers=[get_logger()]))
        if batch_size > 1:
            return _run_batches(opt, objective, budget, choices, batch_size, executor,
                                record)  # fmt: skip
        return _run(opt, objective, budget, choices, n_workers, executor, record)


def _several_values(value: Any) -> bool:
    """Whether an objective returned several values (a tuple, a dict, an array)."""
    if isinstance(value, (tuple, list, Mapping)):
        return True
    size = getattr(value, "size", None)  # NumPy arrays; a tensor's is a method
    size = value.numel() if isinstance(value, Tensor) else size
    return isinstance(size, int) and size > 1


def _fingerprint(objective: Any, pool: Tensor | None) -> dict[str, Any]:
    """The objective's (and pool's) fingerprint a checkpoint records."""
    fingerprint: dict[str, Any] = {"objective": objective_fingerprint(objective)}
    if pool is not None:
        fingerprint["candidates"] = pool_fingerprint(pool)
    return fingerprint


def _run_batches(
    opt: TreeOptimizer,
    objective: Callable[[dict[str, Any]], float],
    budget: int,
    choices: Tensor | None,
    batch_size: int,
    executor: Executor | None,
    record: Callable[[dict[str, Any], Any, float], None],
) -> OptimizationResult:
    """[`minimize()`][treebo.loop.run.minimize] in synchronous batches: ask
    ``batch_size`` configurations, evaluate them at once, tell them in order."""
    _check_picklable(objective, executor)
    pool = ThreadPoolExecutor(batch_size) if executor is None else executor
    futures: list[Future] = []
    batch: list[dict[str, Any]] = []
    recorded = 0  # of the current batch
    try:
        while len(opt.history) < budget:
            size = min(batch_size, budget - len(opt.history))
            batch, recorded = opt.ask(size, choices), 0
            futures = [pool.submit(_evaluate, objective, dict(p)) for p in batch]
            wait(futures)
            for params, future in zip(batch, futures, strict=True):
                recorded += 1
                record(params, *_outcome(future))
    finally:
        _keep_finished(opt, zip(futures[recorded:], batch[recorded:], strict=True))
        if executor is None:
            pool.shutdown(wait=False, cancel_futures=True)
    return opt.result()


def _outcome(future: Future) -> tuple[Any, float]:
    """``(value, seconds)`` of a finished evaluation; the exception as the value where
    a worker died or ran out of time."""
    try:
        return future.result()
    except Exception as err:
        return err, getattr(err, "seconds", 0.0)


def _keep_finished(
    opt: TreeOptimizer, running: Iterable[tuple[Future, dict[str, Any]]]
) -> None:
    """Tell the evaluations that finished while the loop was being stopped; cancel
    the others."""
    for future, params in running:
        if future.done() and not future.cancelled() and not future.exception():
            value, seconds = future.result()
            opt.tell(params, value, eval_seconds=seconds)
        else:
            future.cancel()


def _check_picklable(objective: Any, executor: Executor | None) -> None:
    """Refuse an objective a process pool cannot take, before any evaluation."""
    if isinstance(executor, ProcessPoolExecutor):
        try:
            pickle.dumps(objective)
        except Exception as err:  # else every trial would fail the same way
            raise TypeError(
                "objective must be picklable to run in a ProcessPoolExecutor "
                f"(define it at module level): {err}"
            ) from err


def _run(
    opt: TreeOptimizer,
    objective: Callable[[dict[str, Any]], float],
    budget: int,
    choices: Tensor | None,
    n_workers: int,
    executor: Executor | None,
    record: Callable[[dict[str, Any], Any, float], None],
) -> OptimizationResult:
    """The evaluations of [`minimize()`][treebo.loop.run.minimize] up to ``budget``, in
    the calling thread or on ``executor`` (arguments as
    [`minimize()`][treebo.loop.run.minimize]'s)."""

    if executor is None and n_workers == 1:
        while len(opt.history) < budget:
            params = opt.ask(choices)
            record(params, *_evaluate(objective, dict(params)))
        return opt.result()

    _check_picklable(objective, executor)
    own_executor = executor is None
    pool = ThreadPoolExecutor(n_workers) if executor is None else executor
    running: dict[Future, dict[str, Any]] = {}
    try:
        while len(opt.history) < budget:
            while len(running) < n_workers and len(opt.history) + len(running) < budget:
                params = opt.ask(choices)
                running[pool.submit(_evaluate, objective, dict(params))] = params
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                params = running.pop(future)
                record(params, *_outcome(future))
    finally:
        _keep_finished(opt, running.items())
        if own_executor:
            pool.shutdown(wait=False, cancel_futures=True)
    return opt.result()
