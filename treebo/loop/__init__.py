"""The optimization loop: ask/tell with dicts, and one-call
[`minimize()`][treebo.loop.run.minimize].

::

    from treebo import minimize
    from treebo.test_functions import Jenatton

    problem = Jenatton()
    result = minimize(problem.objective, problem.space, budget=40, seed=0)
    result.best_params, result.best_value

Every evaluation is recorded as a [`Trial`][treebo.loop.history.Trial]. An objective
that raises or returns anything but a finite real number is recorded as failed, with the
reason, and the loop goes on (the model sees the worst score observed so far at that
point, so it steers away from it); a
[`ProcessExecutor`][treebo.loop.executors.ProcessExecutor] also ends evaluations that
run past a time limit, and a
[`TimeLimitExecutor`][treebo.loop.executors.TimeLimitExecutor] puts one on any executor
(a Dask or Ray cluster's). With a ``checkpoint`` path every evaluation is appended to a
journal as soon as it is told, and a run started with the same path and settings resumes
from it exactly. Each finished trial is logged at INFO on the ``"treebo"`` logger, on
stderr by default ([`set_verbosity()`][treebo.loop.log.set_verbosity],
[`treebo.loop.log`][treebo.loop.log]).
"""

from treebo.loop.box import BoxResult, box_space, minimize_box
from treebo.loop.checkpoint import (
    CHECKPOINT_VERSION,
    CheckpointInUseError,
    CheckpointMismatchError,
    CheckpointVersionError,
)
from treebo.loop.design import initial_design
from treebo.loop.executors import (
    EvaluationTimeout,
    ProcessExecutor,
    TimeLimitExecutor,
)
from treebo.loop.history import History, OptimizationResult, Trial
from treebo.loop.log import (
    disable_default_handler,
    enable_default_handler,
    get_logger,
    set_verbosity,
)
from treebo.loop.optimizer import TreeOptimizer
from treebo.loop.run import minimize

__all__ = [
    "BoxResult",
    "CHECKPOINT_VERSION",
    "CheckpointInUseError",
    "CheckpointMismatchError",
    "CheckpointVersionError",
    "EvaluationTimeout",
    "History",
    "OptimizationResult",
    "ProcessExecutor",
    "TimeLimitExecutor",
    "TreeOptimizer",
    "Trial",
    "box_space",
    "disable_default_handler",
    "enable_default_handler",
    "get_logger",
    "initial_design",
    "minimize",
    "minimize_box",
    "set_verbosity",
]
