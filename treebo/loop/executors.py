"""Evaluations with a time limit.

Python cannot stop a function that hangs in a thread. An evaluation that may hang (a
simulator that deadlocks, a training run that never converges) is run in a process of
its own instead, which can be ended: each call submitted to a
[`ProcessExecutor`][treebo.loop.executors.ProcessExecutor] starts a fresh process, and a
call that runs past ``timeout`` seconds has its process ended and its future raise
[`EvaluationTimeout`][treebo.loop.executors.EvaluationTimeout].
[`minimize()`][treebo.loop.run.minimize] records that as a failed trial and goes on.

On a cluster (Dask, Ray), where the cluster owns the worker processes,
[`TimeLimitExecutor`][treebo.loop.executors.TimeLimitExecutor] puts the same limit on
any executor: each call runs in a child process of its worker, ended past the limit.

Example:
    >>> import time
    >>> from treebo.loop import ProcessExecutor
    >>> with ProcessExecutor(max_workers=2, timeout=0.5) as pool:
    ...     quick, stuck = pool.submit(abs, -3), pool.submit(time.sleep, 60)
    ...     print(quick.result(), type(stuck.exception()).__name__)
    3 EvaluationTimeout
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from typing import Any

#: Seconds a process gets to exit after SIGTERM before it is killed.
TERMINATE_GRACE = 1.0


class EvaluationTimeout(TimeoutError):
    """An evaluation ran past its time limit.

    Args:
        seconds: The time limit.
        outcome: What became of the evaluation.

    Attributes:
        seconds: The time limit.
    """

    def __init__(self, seconds: float, outcome: str = "its process was ended") -> None:
        super().__init__(f"the evaluation ran for more than {seconds:g} s; {outcome}")
        self.seconds = seconds
        self.outcome = outcome

    def __reduce__(self) -> tuple:
        # Raised on a cluster's worker, it travels back pickled.
        return type(self), (self.seconds, self.outcome)


class ProcessExecutor(Executor):
    """A `concurrent.futures.Executor` that runs each call in a new process.

    Unlike `ProcessPoolExecutor`, no worker is reused, so a call that runs too long can
    be ended without touching the others, and a call that crashes its process (a
    segfault, ``os._exit``) fails alone with a `ChildProcessError`.

    Args:
        max_workers: How many calls run at once; further calls wait.
        timeout: Seconds a call may run (``None``: no limit). A call past it has its
            process terminated (killed if it has not exited `TERMINATE_GRACE` seconds
            later) and its future raises
            [`EvaluationTimeout`][treebo.loop.executors.EvaluationTimeout].
        mp_context: The `multiprocessing` context that starts the processes (default:
            the platform's default start method, as for ``ProcessPoolExecutor``). With
            ``"spawn"`` or ``"forkserver"`` the function and its arguments must be
            picklable. Results and exceptions always travel back pickled.

    Example:
        >>> with ProcessExecutor(max_workers=1, timeout=60) as pool:
        ...     pool.submit(pow, 2, 10).result()
        1024
    """

    def __init__(
        self,
        max_workers: int = 1,
        timeout: float | None = None,
        mp_context: BaseContext | None = None,
    ) -> None:
        if isinstance(max_workers, bool) or not isinstance(max_workers, int):
            raise TypeError(f"max_workers must be an int, got {max_workers!r}.")
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}.")
        if timeout is not None and not (
            isinstance(timeout, (int, float))
            and not isinstance(timeout, bool)
            and timeout > 0
        ):
            raise ValueError(
                f"timeout must be a positive number or None, got {timeout!r}."
            )
        self.max_workers = max_workers
        self.timeout = None if timeout is None else float(timeout)
        self._context = mp_context or multiprocessing.get_context()
        self._waiters = ThreadPoolExecutor(
            max_workers, thread_name_prefix="treebo-eval"
        )
        self._running: set[multiprocessing.process.BaseProcess] = set()
        self._lock = threading.Lock()
        self._cancelled = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """Run ``fn(*args, **kwargs)`` in a new process; returns its future."""
        return self._waiters.submit(self._run, fn, args, kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking calls; with ``cancel_futures``, also end running ones.

        Args:
            wait: Wait for the running calls (and, without ``cancel_futures``,
                the queued ones) to finish.
            cancel_futures: Cancel queued calls and end the processes of
                running ones (their futures raise ``ChildProcessError``).
        """
        if cancel_futures:
            # Close the queue first: a call ended below must not let a queued
            # one start in its place.
            with self._lock:
                self._cancelled = True
                running = list(self._running)
            self._waiters.shutdown(wait=False, cancel_futures=True)
            for process in running:
                _end(process)
        self._waiters.shutdown(wait=wait, cancel_futures=cancel_futures)

    def _run(self, fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> Any:
        def start(process: multiprocessing.process.BaseProcess) -> None:
            with self._lock:
                if self._cancelled:
                    raise ChildProcessError("the executor was shut down")
                process.start()
                self._running.add(process)

        def finish(process: multiprocessing.process.BaseProcess) -> None:
            with self._lock:
                self._running.discard(process)

        return _call_in_child(
            self._context, fn, args, kwargs, self.timeout, start=start, finish=finish
        )


class TimeLimitExecutor(Executor):
    """Any executor, with a time limit on each call.

    Each call runs, on the wrapped executor's worker, in a child process of that worker
    (forked where the platform allows, so ``fn`` need not be picklable again). A call
    still running ``timeout`` seconds after it started has its child process ended, and
    its future raises [`EvaluationTimeout`][treebo.loop.executors.EvaluationTimeout]:
    the worker is free again at once, which cancelling a Dask or Ray task that hangs
    would not do. A child process that dies (a segfault, ``os._exit``) fails its call
    alone with a `ChildProcessError`. Results and exceptions travel back from the child
    pickled.

    Dask's worker processes are daemonic by default, and a daemonic process may not
    start children: start the cluster under
    ``dask.config.set({"distributed.worker.daemon": False})``.

    Args:
        executor: The executor that runs the calls (a Dask ``Client.get_executor()``, a
            [`RayExecutor`][treebo.integrations.ray.RayExecutor], a thread pool). Shut
            down with this one.
        timeout: Seconds a call may run, a positive number.

    Example:
        >>> import time
        >>> from concurrent.futures import ThreadPoolExecutor
        >>> with TimeLimitExecutor(ThreadPoolExecutor(2), timeout=0.5) as pool:
        ...     quick, slow = pool.submit(abs, -3), pool.submit(time.sleep, 60)
        ...     print(quick.result(), type(slow.exception()).__name__)
        3 EvaluationTimeout
    """

    def __init__(self, executor: Executor, timeout: float) -> None:
        if not isinstance(executor, Executor):
            raise TypeError(
                "executor must be a concurrent.futures.Executor, got "
                f"{type(executor).__name__}."
            )
        if isinstance(timeout, bool) or not (
            isinstance(timeout, (int, float)) and timeout > 0
        ):
            raise ValueError(f"timeout must be a positive number, got {timeout!r}.")
        self.executor = executor
        self.timeout = float(timeout)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """Submit ``fn(*args, **kwargs)``, to run in a child process of the
        worker with the time limit; returns the wrapped executor's future."""
        return self.executor.submit(
            call_with_time_limit, fn, self.timeout, args, kwargs
        )

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Shut the wrapped executor down (arguments as its own)."""
        self.executor.shutdown(wait=wait, cancel_futures=cancel_futures)


def call_with_time_limit(
    fn: Callable[..., Any], timeout: float | None, args: tuple, kwargs: dict
) -> Any:
    """``fn(*args, **kwargs)`` in a child process, ended past ``timeout`` s.

    Raises:
        EvaluationTimeout: The call ran past ``timeout``.
        ChildProcessError: The child process died without a result.
        RuntimeError: This process is daemonic (a Dask worker started with
            ``distributed.worker.daemon`` on) and may not start one.
    """
    if multiprocessing.current_process().daemon:
        raise RuntimeError(
            "a time-limited evaluation runs in a child process, and this worker "
            "process is daemonic; for a Dask cluster, create it under "
            'dask.config.set({"distributed.worker.daemon": False}).'
        )
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    return _call_in_child(context, fn, args, kwargs, timeout)


def _call_in_child(
    context: BaseContext,
    fn: Callable[..., Any],
    args: tuple,
    kwargs: dict[str, Any],
    timeout: float | None,
    start: Callable[[multiprocessing.process.BaseProcess], None] | None = None,
    finish: Callable[[multiprocessing.process.BaseProcess], None] | None = None,
) -> Any:
    """Run ``fn`` in a new process of ``context``, ended past ``timeout``;
    ``start`` starts the process (default: ``process.start()``) and
    ``finish`` is called once it is over."""
    receive, send = context.Pipe(duplex=False)
    process = context.Process(
        target=_call_and_send, args=(send, fn, args, kwargs), name="treebo-eval"
    )
    try:
        if start is None:
            process.start()
        else:
            start(process)
    except BaseException:
        receive.close()
        send.close()
        raise
    send.close()  # the child holds the only writing end now
    try:
        if not receive.poll(timeout):
            _end(process)
            raise EvaluationTimeout(timeout)
        try:
            succeeded, payload = receive.recv()
        except EOFError:
            raise ChildProcessError(
                f"the evaluation's process exited with code {_exit_code(process)} "
                "before returning a result"
            ) from None
        process.join()
    finally:
        receive.close()
        if finish is not None:
            finish(process)
    if succeeded:
        return payload
    raise payload


def _call_and_send(
    send: Connection, fn: Callable[..., Any], args: tuple, kwargs: dict
) -> None:
    """The child's side: call ``fn`` and send ``(succeeded, result or error)``."""
    try:
        message = (True, fn(*args, **kwargs))
    except BaseException as err:  # sent back to the parent's future
        message = (False, err)
    try:
        send.send(message)
    except Exception as err:  # the result or the exception does not pickle
        send.send((False, TypeError(f"could not send the result back: {err}")))
    finally:
        send.close()


def _end(process: multiprocessing.process.BaseProcess) -> None:
    """Terminate ``process``, and kill it if it has not exited soon after."""
    if process.exitcode is not None:
        return
    process.terminate()
    process.join(TERMINATE_GRACE)
    if process.exitcode is None:
        process.kill()
        process.join()


def _exit_code(
    process: multiprocessing.process.BaseProcess, wait: float = 5.0
) -> int | None:
    """The exit code of an ended ``process``.

    Starting another process reaps finished children from whichever thread
    starts it, so ``join`` can return before that thread has stored the code;
    poll briefly for it.
    """
    process.join()
    deadline = time.monotonic() + wait
    while process.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.005)
    return process.exitcode
