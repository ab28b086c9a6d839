"""treebo: Bayesian optimization over tree-structured problems, on BoTorch.

The names below load on first use (PEP 562), so that ``treebo --help`` and
``treebo --version`` answer without importing PyTorch.
"""

from typing import TYPE_CHECKING

from treebo._exports import lazy_exports

__version__ = "0.1.0"

__all__ = [
    "Categorical",
    "Choice",
    "ConfigurationError",
    "Integer",
    "OptimizationResult",
    "Real",
    "TreeOptimizer",
    "TreeSpace",
    "TreeStructure",
    "Trial",
    "Vertex",
    "minimize",
    "minimize_box",
    "set_verbosity",
]

_FROM_LOOP = {"OptimizationResult", "TreeOptimizer", "Trial", "minimize"}
_FROM_LOOP |= {"minimize_box", "set_verbosity"}
__getattr__, __dir__ = lazy_exports(
    __name__,
    {n: "treebo.loop" if n in _FROM_LOOP else "treebo.space" for n in __all__},
)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from treebo.loop import (
        OptimizationResult,
        TreeOptimizer,
        Trial,
        minimize,
        minimize_box,
        set_verbosity,
    )
    from treebo.space import (
        Categorical,
        Choice,
        ConfigurationError,
        Integer,
        Real,
        TreeSpace,
        TreeStructure,
        Vertex,
    )
