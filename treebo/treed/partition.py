r"""The input-space partition of a treed GP (Assael et al., HTBO, Sec. 3.1).

A binary tree over the inputs, grown from the data as in CART: a node $A$ is split on
the feature $h$ and threshold $\tau$ that maximize the reduction in uncertainty (eq. 5
of Assael et al., 2014)

$$
I(A, A', A'') = U(A) - \frac{|A'|}{|A|} U(A') - \frac{|A''|}{|A|} U(A''),
\qquad U(A) = \frac{1}{|A|} \sum_{i \in A} (y_i - \bar y_A)^2,
$$

with one difference from CART that matters for BO: $\tau$ is an observed value $x_{kh}$
and the points with $x_h = \tau$ belong to *both* children ($A' = \{x_h \le \tau\}$,
$A'' = \{x_h \ge \tau\}$), so that no gap between two leaves is left without data. Every
child keeps at least ``min_leaf_size`` points; a node with no such split that reduces
$U$ is a leaf.

The tree is grown one depth level at a time, every node of a level at once: the points
are sorted once per feature, and prefix sums over that order of the node memberships,
$y$ and $y^2$ give the statistics of every candidate split of every node in one tensor
operation, so a level costs $O(N_\ell\, d\, n)$ after an $O(d\, n \log n)$ sort.

Example:
    >>> import torch
    >>> X = torch.linspace(0, 1, 20, dtype=torch.float64).unsqueeze(-1)
    >>> y = torch.where(X[:, 0] < 0.5, 0.0, 1.0)
    >>> part = build_partition(X, y, min_leaf_size=10)
    >>> part.num_leaves
    2
    >>> part.leaf_index(torch.tensor([[0.1], [0.9]], dtype=torch.float64)).tolist()
    [0, 1]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

#: Relative reduction of $U$ below which a split is not worth making.
MIN_GAIN = 1e-12


@dataclass(frozen=True)
class TreePartition:
    r"""A binary partition tree over the inputs.

    Nodes are numbered in the order they are created (the root is 0, each
    level after the one above). Leaves are numbered ``0 .. L-1`` in node
    order.

    Attributes:
        feature: ``N`` long: the split feature of each node (-1 at leaves).
        threshold: ``N``: the split threshold (NaN at leaves).
        left: ``N`` long: the child with $x_h \le \tau$ (-1 at leaves).
        right: ``N`` long: the child with $x_h \ge \tau$ (-1 at leaves).
        parent: ``N`` long (-1 at the root).
        depth: ``N`` long (0 at the root).
        members: ``N x n`` booleans: the training points each node holds (a
            point on a threshold is in both children).
    """

    feature: Tensor
    threshold: Tensor
    left: Tensor
    right: Tensor
    parent: Tensor
    depth: Tensor
    members: Tensor

    @property
    def num_nodes(self) -> int:
        return self.feature.shape[0]

    @property
    def is_leaf(self) -> Tensor:
        """``N`` booleans."""
        return self.feature < 0

    @property
    def leaves(self) -> Tensor:
        """``L`` node indices of the leaves, in node order."""
        return self.is_leaf.nonzero().squeeze(-1)

    @property
    def num_leaves(self) -> int:
        return int(self.is_leaf.sum())

    @property
    def max_depth(self) -> int:
        return int(self.depth.max())

    @property
    def leaf_members(self) -> Tensor:
        """``L x n`` booleans: the training points of each leaf."""
        return self.members[self.leaves]

    @property
    def leaf_of_node(self) -> Tensor:
        """``N`` long: the leaf number of each leaf node, -1 elsewhere."""
        out = torch.full_like(self.feature, -1)
        out[self.leaves] = torch.arange(self.num_leaves, device=out.device)
        return out

    def leaf_index(self, X: Tensor) -> Tensor:
        r"""The leaf of each point (``x_h == tau`` goes left).

        Args:
            X: ``... x d`` points.

        Returns:
            ``...`` long leaf numbers in ``0 .. L-1``.
        """
        node = torch.zeros(X.shape[:-1], dtype=torch.long, device=X.device)
        for _ in range(self.max_depth):  # levels, not points
            feat = self.feature[node]
            inner = feat >= 0
            value = X.gather(-1, feat.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            goes_left = value <= self.threshold[node]
            child = torch.where(goes_left, self.left[node], self.right[node])
            node = torch.where(inner, child, node)
        return self.leaf_of_node[node]

    def membership(self, X: Tensor) -> Tensor:
        r"""Whether each point lies in each leaf's closed cell.

        A point on a threshold lies in both cells beside it.

        Args:
            X: ``... x n x d`` points.

        Returns:
            ``... x n x L`` booleans.
        """
        feat, thr, sign = self.leaf_constraints()  # L x D each
        value = X[..., feat.clamp(min=0)]  # ... x n x L x D
        ok = (value - thr) * sign <= 0
        return (ok | (feat < 0)).all(dim=-1)

    def ancestors(self) -> Tensor:
        """``L x (D + 1)`` long: each leaf, its parent, ... up to the root,
        then -1 (``D`` the maximum depth)."""
        node = self.leaves
        rows = [node]
        for _ in range(self.max_depth):  # levels, every leaf at once
            node = torch.where(node >= 0, self.parent[node.clamp(min=0)], node)
            rows.append(node)
        return torch.stack(rows, dim=-1)

    def leaf_constraints(self) -> tuple[Tensor, Tensor, Tensor]:
        r"""The split tests on each leaf's path from the root.

        Returns:
            ``(feature, threshold, sign)``, each ``L x D`` (``D`` the maximum
            depth, at least 1): leaf $l$ holds $x$ iff
            $\mathrm{sign}\,(x_{\mathrm{feature}} - \mathrm{threshold})
            \le 0$ on every entry with ``feature >= 0`` (``sign`` is +1 below a
            left turn, -1 below a right turn).
        """
        anc = self.ancestors()
        if anc.shape[-1] == 1:  # a single leaf: no tests
            anc = torch.cat([anc, torch.full_like(anc, -1)], dim=-1)
        child, par = anc[:, :-1], anc[:, 1:]
        has = par >= 0
        p = par.clamp(min=0)
        feat = torch.where(has, self.feature[p], -1)
        thr = torch.where(has, self.threshold[p], 0.0)
        sign = torch.where(self.left[p] == child, 1.0, -1.0).to(thr)
        return feat, thr, sign

    def shared_weights(self) -> Tensor:
        r"""``N x n``: each training point's weight in each node.

        1 at the root, halved in both children wherever a point lies on its
        node's threshold (and so in both), 0 outside the node: a point's
        weights over the leaves of any subtree sum to its weight at the
        subtree's root.
        """
        weight = self.members.to(self.threshold)
        for _ in range(self.max_depth):  # levels: every node at once
            par = self.parent.clamp(min=0)
            both = self.members[self.left[par]] & self.members[self.right[par]]
            halve = (self.parent >= 0).unsqueeze(-1) & both
            inherited = weight[par] * torch.where(halve, 0.5, 1.0).to(weight)
            weight = torch.where(self.parent.unsqueeze(-1) >= 0, inherited, weight)
            weight = weight * self.members
        return weight

    def prune(self, collapse: Tensor) -> TreePartition:
        """The tree with the given inner nodes made leaves.

        Args:
            collapse: ``N`` booleans: nodes to turn into leaves (their
                descendants are dropped; entries of leaves are ignored).

        Returns:
            A [`TreePartition`][treebo.treed.partition.TreePartition] of the kept nodes,
            numbered in the same order.
        """
        if collapse.shape != self.feature.shape:
            raise ValueError(
                f"collapse must have one entry per node ({self.num_nodes}), got "
                f"shape {tuple(collapse.shape)}."
            )
        inner = ~self.is_leaf & ~collapse.to(torch.bool)
        kept = self.parent < 0
        for _ in range(self.max_depth):  # levels: a node is kept below a kept split
            par = self.parent.clamp(min=0)
            kept = kept | ((self.parent >= 0) & kept[par] & inner[par])
        new_id = torch.cumsum(kept.long(), 0) - 1
        inner = inner[kept]

        def renumber(node: Tensor) -> Tensor:
            return torch.where(inner, new_id[node.clamp(min=0)], -1)

        parent = self.parent[kept]
        return TreePartition(
            feature=torch.where(inner, self.feature[kept], -1),
            threshold=torch.where(inner, self.threshold[kept], torch.nan),
            left=renumber(self.left[kept]),
            right=renumber(self.right[kept]),
            parent=torch.where(parent >= 0, new_id[parent.clamp(min=0)], -1),
            depth=self.depth[kept],
            members=self.members[kept],
        )


def build_partition(
    X: Tensor,
    y: Tensor,
    min_leaf_size: int = 5,
    max_depth: int | None = None,
    split_test: Callable[[Tensor, Tensor], Tensor] | None = None,
) -> TreePartition:
    r"""Grow the partition tree of ``X`` by uncertainty reduction on ``y``.

    Deterministic: ties between splits go to the lowest feature, then the
    lowest threshold.

    Args:
        X: ``n x d`` training inputs.
        y: ``n`` (or ``n x 1``) training outcomes.
        min_leaf_size: The fewest points a child may hold.
        max_depth: The deepest a leaf may be (``None``: no limit).
        split_test: ``split_test(parents, children) -> accept``: given the
            ``S x n`` memberships of the nodes about to split and the
            ``S x 2 x n`` memberships of their children, ``S`` booleans; a
            rejected node becomes a leaf (default: accept every split).

    Returns:
        The [`TreePartition`][treebo.treed.partition.TreePartition].
    """
    if isinstance(min_leaf_size, bool) or not isinstance(min_leaf_size, int):
        raise TypeError(f"min_leaf_size must be an int, got {min_leaf_size!r}.")
    if min_leaf_size < 1:
        raise ValueError(f"min_leaf_size must be >= 1, got {min_leaf_size}.")
    if X.dim() != 2:
        raise ValueError(f"X must be n x d, got shape {tuple(X.shape)}.")
    y = y.reshape(-1).to(X)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}.")
    y = y - y.mean()  # sums of squares below lose no digits to an offset
    n, d = X.shape
    device = X.device
    values, order = X.T.sort(dim=-1)  # d x n
    values = values.contiguous()
    # Where each sorted value's ties begin and end: x <= v covers positions
    # [0, upper), x >= v covers [lower, n).
    upper = torch.searchsorted(values, values, right=True)  # d x n
    lower = torch.searchsorted(values, values, right=False)
    y_sorted = y[order]  # d x n

    feature, threshold, left, right, parent, depth = [], [], [], [], [], []
    members = [torch.ones(1, n, dtype=torch.bool, device=device)]
    frontier = torch.zeros(1, dtype=torch.long, device=device)  # node numbers
    parent.append(-1)
    depth.append(0)
    next_node, level = 1, 0
    while frontier.numel():
        M = members[-1]  # F x n memberships of the frontier nodes
        if max_depth is not None and level >= max_depth:
            split = torch.zeros(M.shape[0], dtype=torch.bool, device=device)
            best_f = best_k = torch.zeros_like(frontier)
        else:
            split, best_f, best_k = _best_splits(
                M, order, values, upper, lower, y_sorted, min_leaf_size
            )
        thr = values[best_f, best_k]
        # The children of every candidate split: S x 2 x n memberships.
        x = X.T[best_f[split]]
        t = thr[split].unsqueeze(-1)
        Ms = M[split]
        children = torch.stack([Ms & (x <= t), Ms & (x >= t)], dim=1)
        if split_test is not None and bool(split.any()):
            accept = split_test(Ms, children)
            children = children[accept]
            split = split.clone()
            split[split.nonzero().squeeze(-1)] = accept
        F = frontier.shape[0]
        kids = torch.full((F, 2), -1, dtype=torch.long, device=device)
        num_split = int(split.sum())
        kids[split] = (
            torch.arange(2 * num_split, device=device).reshape(-1, 2) + next_node
        )
        feature.append(torch.where(split, best_f, -1))
        threshold.append(torch.where(split, thr, torch.nan))
        left.append(kids[:, 0])
        right.append(kids[:, 1])
        if not num_split:
            break
        members.append(children.reshape(-1, n))
        parent.extend(frontier[split].repeat_interleave(2).tolist())
        depth.extend([level + 1] * (2 * num_split))
        frontier = kids[split].reshape(-1)
        next_node += 2 * num_split
        level += 1
    long = {"dtype": torch.long, "device": device}
    return TreePartition(
        feature=torch.cat(feature),
        threshold=torch.cat(threshold),
        left=torch.cat(left),
        right=torch.cat(right),
        parent=torch.tensor(parent, **long),
        depth=torch.tensor(depth, **long),
        members=torch.cat(members),
    )


def padded_rows(mask: Tensor) -> tuple[Tensor, Tensor]:
    r"""Row indices of each set in ``mask``, padded to the largest set.

    Args:
        mask: ``... x n`` booleans.

    Returns:
        ``(index, valid)``, each ``... x m`` with ``m`` the largest count:
        the members of each set in increasing order, then zeros, and which
        entries are members.
    """
    counts = mask.sum(dim=-1)
    m = max(int(counts.max()) if counts.numel() else 0, 1)
    order = mask.to(torch.int8).argsort(dim=-1, descending=True, stable=True)
    index = order[..., :m]
    valid = torch.arange(m, device=mask.device) < counts.unsqueeze(-1)
    return index.masked_fill(~valid, 0), valid


def group_by_size(sizes: Tensor, batch_cost: float) -> Tensor:
    r"""Group sets by size into batches that are cheap to factor together.

    Each batch is padded to its largest set, so a batch of ``c`` sets of at
    most ``m`` rows costs about ``batch_cost + c m^3`` (a fixed cost per
    batched call, then ``c`` Cholesky factorizations). The batches are runs
    of the sizes in increasing order, chosen by dynamic programming over the
    ``K`` distinct sizes to minimize the total cost (``O(K^2)``, once per
    partition).

    Args:
        sizes: ``F`` long: each set's size.
        batch_cost: The fixed cost of one batch, in units of ``m^3``.

    Returns:
        ``F`` long: each set's batch, ``0, 1, ...`` in increasing size.

    Example:
        >>> group_by_size(torch.tensor([3, 90, 4, 100]), batch_cost=1e6).tolist()
        [0, 1, 0, 1]
    """
    distinct, position, counts = sizes.unique(return_inverse=True, return_counts=True)
    cube = (distinct.double() ** 3).tolist()
    total = [0] + counts.cumsum(0).tolist()  # sets among the i smallest sizes
    # best[j]: cheapest batching of the j smallest sizes; start[j]: its last run.
    best, start = [0.0], [0]
    for j in range(1, len(cube) + 1):
        costs = [
            best[i] + batch_cost + (total[j] - total[i]) * cube[j - 1] for i in range(j)
        ]
        i = min(range(j), key=costs.__getitem__)
        best.append(costs[i])
        start.append(i)
    batch_of_size = [0] * len(cube)
    j, runs = len(cube), []
    while j > 0:
        runs.append((start[j], j))
        j = start[j]
    for b, (i, j) in enumerate(reversed(runs)):
        batch_of_size[i:j] = [b] * (j - i)
    return torch.tensor(batch_of_size, device=sizes.device)[position]


def _best_splits(
    M: Tensor,
    order: Tensor,
    values: Tensor,
    upper: Tensor,
    lower: Tensor,
    y_sorted: Tensor,
    min_leaf_size: int,
) -> tuple[Tensor, Tensor, Tensor]:
    r"""The best split of each of ``F`` nodes.

    Args:
        M: ``F x n`` node memberships.
        order, values, upper, lower, y_sorted: ``d x n`` per-feature sort
            order, sorted values, tie ranges and outcomes.
        min_leaf_size: The fewest points a child may hold.

    Returns:
        ``(split, feature, position)``: ``F`` booleans (whether the node
        splits), and the feature and sorted position of its threshold.
    """
    F = M.shape[0]
    d, n = order.shape
    m = M[:, order].to(y_sorted)  # F x d x n, in each feature's sorted order
    stats = torch.stack([m, m * y_sorted, m * y_sorted.square()])  # 3 x F x d x n
    prefix = torch.nn.functional.pad(stats.cumsum(-1), (1, 0))  # 3 x F x d x n+1
    total = prefix[..., -1:]
    idx_up = upper.expand(3, F, d, n)
    idx_lo = lower.expand(3, F, d, n)
    below = prefix.gather(-1, idx_up)  # x <= value at each position
    above = total - prefix.gather(-1, idx_lo)  # x >= value
    count, s1, s2 = total[0], total[1], total[2]  # F x d x 1

    def sse(c: Tensor, a: Tensor, b: Tensor) -> Tensor:
        # |A| U(A) = sum y^2 - (sum y)^2 / |A|, clamped against round-off.
        return (b - a.square() / c.clamp(min=1)).clamp(min=0)

    gain = sse(count, s1, s2) - sse(below[0], below[1], below[2])
    gain = gain - sse(above[0], above[1], above[2])
    gain = gain / count.clamp(min=1)  # eq. 5: (SSE(A) - SSE(A') - SSE(A'')) / |A|
    valid = (
        m.bool()  # the threshold is a point of the node
        & (below[0] >= min_leaf_size)
        & (above[0] >= min_leaf_size)
        & (below[0] < count)  # both children are smaller than the node
        & (above[0] < count)
    )
    spread = (sse(count, s1, s2) / count.clamp(min=1))[:, 0, 0]  # U(A)
    gain = gain.masked_fill(~valid, -torch.inf).reshape(F, d * n)
    best, flat = gain.max(dim=-1)  # first maximum: lowest feature, position
    split = torch.isfinite(best) & (best > MIN_GAIN * spread)
    return split, flat // n, flat % n
