"""BoTorch models for tree-structured spaces."""

from treebo.models.add_tree_gp import AddTreeGP, VertexPosterior

__all__ = ["AddTreeGP", "VertexPosterior"]
