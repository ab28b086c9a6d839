"""Evaluations on a Ray cluster: [`RayExecutor`][treebo.integrations.ray.RayExecutor].

[`minimize()`][treebo.loop.run.minimize] runs evaluations on any
`concurrent.futures.Executor`. Dask's ``Client.get_executor()`` is one;
Ray has none, so this module provides it: each call becomes a Ray task, and
its future is a `concurrent.futures.Future`.

A task whose worker process dies (killed, out of memory, a segfault) is
retried by Ray up to ``max_retries`` times, so a lost worker costs time, not
the evaluation; past the retries the future raises Ray's error and the loop
records a failed trial. A cancelled future cancels its task.

Example:
    >>> import ray  # doctest: +SKIP
    >>> from treebo import minimize
    >>> from treebo.integrations.ray import RayExecutor
    >>> from treebo.test_functions import Jenatton
    >>> ray.init(num_cpus=4)  # doctest: +SKIP
    >>> problem = Jenatton()
    >>> result = minimize(  # doctest: +SKIP
    ...     problem.objective, problem.space, budget=30, seed=0,
    ...     n_workers=4, executor=RayExecutor())
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError
from typing import Any


def _call(fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> Any:
    """The task's body: ``fn(*args, **kwargs)``."""
    return fn(*args, **kwargs)


class RayExecutor(Executor):
    """A `concurrent.futures.Executor` that runs each call as a Ray task.

    Ray is started on first use if it is not running (``ray.init()`` with its
    defaults: a local cluster); call ``ray.init(...)`` first to join an
    existing one or to size the local one.

    Args:
        max_retries: How many times Ray reruns a call whose worker process
            died (not a call that raised: that fails its future at once).
        **task_options: Further options of the Ray task (``num_cpus``,
            ``num_gpus``, ``memory``, ``resources``, ``runtime_env``, ...), as
            ``ray.remote`` takes them.

    Example:
        >>> import ray  # doctest: +SKIP
        >>> ray.init(num_cpus=2)  # doctest: +SKIP
        >>> with RayExecutor(num_cpus=1) as pool:  # doctest: +SKIP
        ...     pool.submit(pow, 2, 10).result()
        1024
    """

    def __init__(self, max_retries: int = 3, **task_options: Any) -> None:
        try:
            import ray
        except ImportError as err:  # pragma: no cover - depends on the machine
            raise ImportError(
                "RayExecutor needs Ray: pip install 'treebo[ray]'."
            ) from err
        if isinstance(max_retries, bool) or not isinstance(max_retries, int):
            raise TypeError(f"max_retries must be an int, got {max_retries!r}.")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}.")
        self._ray = ray
        self._task = ray.remote(max_retries=max_retries, **task_options)(_call)
        self._running: dict[Future, Any] = {}
        self._lock = threading.Lock()
        self._shut = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """Run ``fn(*args, **kwargs)`` as a Ray task; returns its future."""
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot submit to a RayExecutor after shutdown")
            ref = self._task.remote(fn, args, kwargs)
            future: Future = Future()
            self._running[future] = ref

        def settle(done: Future) -> None:
            with self._lock:
                self._running.pop(future, None)
            try:
                error = done.exception()
                if error is None:
                    future.set_result(done.result())
                else:
                    future.set_exception(error)
            except InvalidStateError:  # cancelled first
                pass

        def forward_cancel(done: Future) -> None:
            if done.cancelled():
                with self._lock:
                    self._running.pop(future, None)
                self._ray.cancel(ref, force=True)

        future.add_done_callback(forward_cancel)
        ref.future().add_done_callback(settle)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking calls.

        Args:
            wait: Wait for the running calls to finish.
            cancel_futures: Cancel the running calls' tasks first (their
                futures are cancelled).
        """
        with self._lock:
            self._shut = True
            running = list(self._running)
        if cancel_futures:
            for future in running:
                future.cancel()
        if wait:
            for future in running:
                if not future.cancelled():
                    future.exception()
