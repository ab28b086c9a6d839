from treebo.treed import TreedGP, build_partition


class UnprunedTreedGP(TreedGP):
    """Paper 003's tree, as a benchmark would build it: grown, not pruned."""

    def grow_partition(self, X, y, min_leaf_size, max_depth):
        return build_partition(X, y, min_leaf_size, max_depth)
