"""treebo: Bayesian optimization over tree-structured problems, on BoTorch."""

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
