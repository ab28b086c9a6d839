"""What every benchmark problem is: the ``Problem`` protocol.

Every suite's problems, whatever their runner, have a search space, an objective to
minimize and its optimal value, so that one harness can run them and one report can
score them. Some have more:

==================  ==========================================================
``pool``            ``m x d`` encodings of the only configurations the objective
                    knows (HPO-B's tables, :mod:`.hpob`): methods choose rows
``grid``            a :class:`~treebo.bktf.Grid` whose points hold the optimum
                    (P8, :mod:`.grid`)
``true_value``      the noise-free value of a configuration, where the
                    objective is noisy (:mod:`.validation`, :mod:`.high_dim`)
``reseed(seed)``    a seed's noise stream (:mod:`.validation`)
==================  ==========================================================

Example:
    >>> from benchmarks.problems import make_problem
    >>> isinstance(make_problem("p1a"), Problem)
    True
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from treebo.space import TreeSpace


@runtime_checkable
class Problem(Protocol):
    """A benchmark problem.

    Attributes:
        space: The search space.
        optimal_value: The objective's minimum (``None`` where unknown, e.g. a
            cross-validated error).
    """

    space: TreeSpace
    optimal_value: float | None

    def objective(self, params: dict[str, Any]) -> float:
        """The value of a configuration, to minimize."""
        ...
