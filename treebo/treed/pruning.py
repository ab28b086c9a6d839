r"""Pruning the treed GP's partition by leave-one-out validation.

Paper 003 splits a node whenever a split reduces the squared error of the node means
(eq. 5), down to 5 points per leaf. That grows a leaf for every few points even where
the function is stationary, and a GP on 5-10 points predicts worse than one GP on all of
them. [`loo_prune()`][treebo.treed.pruning.loo_prune] grows that tree and then, as CART
does, prunes it: a split is kept only where separate GPs on the leaves below it predict
the node's points better than one GP on the node, measured by leave-one-out (LOO)
squared error. LOO needs no penalty for the extra hyper-parameters of more leaves: a GP
on too few points predicts its held-out points badly. Pruning a grown tree, rather than
stopping early, keeps a split that only pays off one level further down.

Each node gets its own isotropic Matern-5/2 GP with an unknown constant mean (a flat
prior, integrated out), its lengthscale $\ell$ and relative nugget $\eta$ chosen from a
grid by the node's restricted likelihood (REML),

$$
\ell_R(\ell, \eta) = -\tfrac{m - 1}{2} \log \frac{y^\top P y}{m - 1}
    - \tfrac12 \log |K| - \tfrac12 \log \mathbf 1^\top K^{-1} \mathbf 1,
\qquad P = K^{-1} - \frac{K^{-1} \mathbf 1 \mathbf 1^\top K^{-1}}
    {\mathbf 1^\top K^{-1} \mathbf 1},
$$

with $K = C_\ell + \eta I$ over the node's $m$ points (the output scale is profiled out
and cancels from the predictions). The LOO residuals of that GP, with the mean
re-estimated without the held-out point, are $e_i = (P y)_i / P_{ii}$, and the node's
score is $E_v = \sum_i w_{vi} e_{vi}^2$, where a point's weight halves each time it lies
on a threshold and so in both children (the weights of a point over the leaves of any
subtree sum to its weight at the subtree's root). All nodes of one size class, and all
grid values, are one batch of padded Cholesky factorizations; the pruning itself is one
tensor step per level.

Example:
    >>> import torch
    >>> from treebo.treed import build_partition
    >>> X = torch.linspace(0, 1, 60, dtype=torch.float64).unsqueeze(-1)
    >>> y = torch.sin(3 * X[:, 0])  # stationary: nothing to split
    >>> loo_prune(build_partition(X, y), X, y).num_leaves
    1
"""

from __future__ import annotations

import torch
from torch import Tensor

from treebo.gp.correlation import stationary_correlation
from treebo.treed.partition import TreePartition, padded_rows

#: Lengthscales tried for each set (inputs in the unit cube).
LOO_LENGTHSCALES = tuple(10.0 ** (k / 4) for k in range(-8, 3))
#: Nuggets tried for each set, relative to its output scale.
LOO_NUGGETS = (1e-6, 1e-3, 1e-1)


def loo_squared_errors(
    X: Tensor,
    y: Tensor,
    masks: Tensor,
    lengthscales: tuple[float, ...] = LOO_LENGTHSCALES,
    nuggets: tuple[float, ...] = LOO_NUGGETS,
) -> tuple[Tensor, Tensor, Tensor]:
    r"""Leave-one-out squared errors of each set's own GP.

    Args:
        X: ``n x d`` inputs (in the unit cube).
        y: ``n`` outcomes.
        masks: ``S x n`` booleans: the sets, each with at least two points.
        lengthscales: The grid of isotropic lengthscales.
        nuggets: The grid of nuggets relative to the output scale.

    Returns:
        ``(errors, index, valid)``, each ``S x m`` with ``m`` the largest
        set: the squared LOO residual of each member, its row in ``X``, and
        which entries are members (errors are zero elsewhere).
    """
    index, valid = padded_rows(masks)  # S x m
    w = valid.to(X)
    S, m = w.shape
    Xs = X[index]
    ls = torch.tensor(lengthscales, dtype=X.dtype, device=X.device)
    nug = torch.tensor(nuggets, dtype=X.dtype, device=X.device)
    sq = torch.cdist(Xs, Xs).square().unsqueeze(1) / ls.square().view(-1, 1, 1)
    C = stationary_correlation(sq, "matern52").unsqueeze(2)  # S x G x 1 x m x m
    wv = w.view(S, 1, 1, m)
    # Padding rows are independent unit variables with zero outcome.
    K = (C * (wv.unsqueeze(-1) * wv.unsqueeze(-2))).repeat(1, 1, nug.numel(), 1, 1)
    K.diagonal(dim1=-2, dim2=-1).add_(wv * nug.view(1, 1, -1, 1) + (1 - wv))
    L, info = torch.linalg.cholesky_ex(K)
    b = torch.stack(
        [(y[index] * w).view(S, 1, 1, m).expand(K.shape[:-1]), wv.expand(K.shape[:-1])],
        dim=-1,
    )
    z = torch.cholesky_solve(b, L)  # K^-1 [y, 1]
    oKo = (b[..., 1] * z[..., 1]).sum(-1).clamp(min=1e-300)
    Py = z[..., 0] - z[..., 1] * ((b[..., 1] * z[..., 0]).sum(-1) / oKo).unsqueeze(-1)
    yPy = (b[..., 0] * Py).sum(-1).clamp(min=1e-300)
    count = w.sum(-1).view(S, 1, 1)
    logdet = 2 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    reml = -0.5 * (count - 1) * torch.log(yPy / (count - 1).clamp(min=1))
    reml = reml - 0.5 * logdet - 0.5 * oKo.log()
    reml = reml.masked_fill(info > 0, -torch.inf).reshape(S, -1)
    best = reml.argmax(dim=-1)  # S: one grid value per set
    rows = torch.arange(S, device=X.device)
    Lb = L.reshape(S, -1, m, m)[rows, best]
    Kinv = torch.cholesky_inverse(Lb)
    Kinv1 = z[..., 1].reshape(S, -1, m)[rows, best]
    P = Kinv - Kinv1.unsqueeze(-1) * Kinv1.unsqueeze(-2) / oKo.reshape(S, -1)[
        rows, best
    ].view(S, 1, 1)
    Py = Py.reshape(S, -1, m)[rows, best]
    diag = P.diagonal(dim1=-2, dim2=-1).clamp(min=1e-300)
    errors = (Py / diag).square() * w
    return errors, index, valid


def loo_prune(
    partition: TreePartition,
    X: Tensor,
    y: Tensor,
    lengthscales: tuple[float, ...] = LOO_LENGTHSCALES,
    nuggets: tuple[float, ...] = LOO_NUGGETS,
) -> TreePartition:
    r"""Prune a grown partition to the subtree that cross-validates best.

    Every node's own GP is scored by its leave-one-out squared error
    $E_v = \sum_i w_{vi} e_{vi}^2$ (weights from
    [`shared_weights()`][treebo.treed.partition.TreePartition.shared_weights]), and from
    the deepest level up each inner node keeps its split only if its children's best
    subtrees score lower: $B_v = \min(E_v, B_{v'} + B_{v''})$. Nodes with fewer than
    three points never keep a split into them.

    Args:
        partition: A grown [`TreePartition`][treebo.treed.partition.TreePartition] of
            ``X``.
        X: ``n x d`` inputs (in the unit cube).
        y: ``n`` (or ``n x 1``) outcomes.
        lengthscales: The grid of isotropic lengthscales of each node's GP.
        nuggets: The grid of relative nuggets of each node's GP.

    Returns:
        The pruned [`TreePartition`][treebo.treed.partition.TreePartition].
    """
    y = y.reshape(-1).to(X)
    if X.dim() != 2 or y.shape[0] != X.shape[0]:
        raise ValueError(
            f"X must be n x d and y hold n values, got shapes {tuple(X.shape)} "
            f"and {tuple(y.shape)}."
        )
    if partition.members.shape[-1] != X.shape[0]:
        raise ValueError(
            f"partition is over {partition.members.shape[-1]} points but X has "
            f"{X.shape[0]}."
        )
    if partition.num_leaves == 1:
        return partition
    y = (y - y.mean()) / y.std().clamp(min=1e-12)
    members = partition.members
    count = members.sum(dim=-1)
    size_class = count.clamp(min=1).float().log2().ceil().clamp(min=2)
    own = torch.full((partition.num_nodes,), torch.inf, dtype=X.dtype, device=X.device)
    weights = partition.shared_weights()
    with torch.no_grad():
        for g in size_class.unique().tolist():  # a batch per size class
            nodes = ((size_class == g) & (count >= 3)).nonzero().squeeze(-1)
            if not nodes.numel():
                continue
            errors, index, valid = loo_squared_errors(
                X, y, members[nodes], lengthscales, nuggets
            )
            w = weights[nodes].gather(-1, index) * valid
            own[nodes] = (errors * w).sum(dim=-1)
    best = own.clone()
    keep = ~partition.is_leaf
    for level in range(partition.max_depth - 1, -1, -1):  # bottom-up levels
        nodes = (keep & (partition.depth == level)).nonzero().squeeze(-1)
        below = best[partition.left[nodes]] + best[partition.right[nodes]]
        split = below < own[nodes]
        best[nodes] = torch.where(split, below, own[nodes])
        keep[nodes] = split
    return partition.prune(~keep)
