"""The optimization loop: ask/tell with dicts, and one-call :func:`minimize`.

::

    from treebo import minimize
    from treebo.test_functions import Jenatton

    problem = Jenatton()
    result = minimize(problem.objective, problem.space, budget=40, seed=0)
    result.best_params, result.best_value

Every evaluation is recorded as a :class:`Trial`. An objective that raises or
returns NaN/inf is recorded as failed and the loop goes on (the model sees the
worst value observed so far at that point, so it steers away from it). With a
``checkpoint`` path the run is written atomically after every evaluation, and a
run started with the same path and settings resumes from it exactly.
"""

from treebo.loop.checkpoint import CHECKPOINT_VERSION, CheckpointMismatchError
from treebo.loop.design import initial_design
from treebo.loop.history import History, OptimizationResult, Trial
from treebo.loop.optimizer import TreeOptimizer
from treebo.loop.run import minimize

__all__ = [
    "CHECKPOINT_VERSION",
    "CheckpointMismatchError",
    "History",
    "OptimizationResult",
    "TreeOptimizer",
    "Trial",
    "initial_design",
    "minimize",
]
