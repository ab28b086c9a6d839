"""Tree-structured search spaces: parameters, vertices, and their tensor layout.

The bottom layer of treebo: every model family, optimizer and the loop read a
[`TreeSpace`][treebo.space.tree_space.TreeSpace] and its
[`TreeStructure`][treebo.space.structure.TreeStructure] (the index tensors of the tree
over the columns of ``X``).
"""

from treebo.space.parameters import (
    Categorical,
    Choice,
    ConfigurationError,
    Integer,
    Real,
    Vertex,
)
from treebo.space.structure import TreeStructure
from treebo.space.tree_space import TreeSpace

__all__ = [
    "Categorical",
    "Choice",
    "ConfigurationError",
    "Integer",
    "Real",
    "TreeSpace",
    "TreeStructure",
    "Vertex",
]
