r"""Exact max-sum message passing on a forest over grid-valued variables.

For variables $x_1, \dots, x_d$, each taking one of ``R`` grid values, unary tables
$u_i$ and pairwise tables $p_e$ on the edges $e = (a_e, b_e)$ of a forest,
[`message_passing_discrete()`][treebo.tree_additive.message_passing.message_passing_discrete]
returns

$$
\arg\max_{x} \sum_i u_i(x_i) + \sum_e p_e(x_{a_e}, x_{b_e})
$$

exactly (Alg. S1 of Han et al., 2021, for a tree-structured graph, where no
triangulation is needed). Every tree is rooted at its smallest variable; messages travel
from the deepest level to the roots, all edges of one level in one tensor step, then the
maximizer is read back down the levels. The cost is $O(E R^2)$ time and $O(d R)$ memory
per batch member.
"""

from __future__ import annotations

import torch
from torch import Tensor

from treebo.tree_additive.forest import ForestSchedule


def message_passing_discrete(
    unary: Tensor,
    pairwise: Tensor,
    edges: Tensor | ForestSchedule | None,
) -> tuple[Tensor, Tensor]:
    r"""Maximize a sum of unary and pairwise tables over a forest.

    Args:
        unary: ``batch_shape x d x R`` value of each variable's grid points.
        pairwise: ``batch_shape x E x R x R``; ``pairwise[..., e, i, j]`` is the
            value of edge ``e`` with its first variable at grid point ``i`` and
            its second at ``j`` (columns of ``edges``, as given).
        edges: ``E x 2`` forest (see
            [`check_forest()`][treebo.tree_additive.forest.check_forest]), or a
            [`ForestSchedule`][treebo.tree_additive.forest.ForestSchedule] built from it
            once and reused across calls (then ``pairwise`` is read with the smaller
            variable of each edge first, as the schedule stores it).

    Returns:
        ``(index, value)``: ``batch_shape x d`` long grid indices of a maximizer
        and its ``batch_shape`` value.

    Example:
        >>> unary = torch.tensor([[0.0, 1.0], [0.0, 0.0]])
        >>> pairwise = torch.tensor([[[0.0, 0.0], [0.0, 2.0]]])
        >>> message_passing_discrete(unary, pairwise, torch.tensor([[0, 1]]))
        (tensor([1, 1]), tensor(3.))
    """
    d, R = unary.shape[-2:]
    if isinstance(edges, ForestSchedule):
        schedule = edges
        if schedule.num_vars != d:
            raise ValueError(
                f"the schedule has {schedule.num_vars} variables, unary has {d}."
            )
    else:
        schedule = ForestSchedule.from_edges(edges, d)
    if pairwise.shape[-3:] != (schedule.num_edges, R, R):
        raise ValueError(
            f"pairwise must be batch_shape x {schedule.num_edges} x {R} x {R}, "
            f"got {tuple(pairwise.shape)}."
        )
    if edges is not None and not isinstance(edges, ForestSchedule) and len(edges):
        # Read the tables in the caller's column order (the schedule's edges
        # have the smaller variable first).
        edges = torch.as_tensor(edges).detach().cpu()
        flipped = (edges[:, 0] > edges[:, 1]).to(pairwise.device)
        pairwise = torch.where(
            flipped[:, None, None], pairwise.transpose(-1, -2), pairwise
        )
    schedule = schedule.to(unary.device)
    batch = torch.broadcast_shapes(unary.shape[:-2], pairwise.shape[:-3])
    belief = unary.expand(*batch, d, R).clone()
    pairwise = pairwise.expand(*batch, *pairwise.shape[-3:])
    best_child = torch.zeros(*batch, d, R, dtype=torch.long, device=unary.device)
    for level in reversed(schedule.levels):
        table = pairwise[..., level.edge, :, :]  # [first, second] of each edge
        # Read every table as [parent value, child value].
        table = torch.where(
            level.child_first[:, None, None], table.transpose(-1, -2), table
        )
        scores = table + belief[..., level.child, None, :]
        message, arg = scores.max(dim=-1)  # *b x k x R (over parent values)
        belief.index_add_(-2, level.parent, message)
        best_child[..., level.child, :] = arg
    index = torch.zeros(*batch, d, dtype=torch.long, device=unary.device)
    root_value, root_index = belief[..., schedule.roots, :].max(dim=-1)
    index[..., schedule.roots] = root_index
    for level in schedule.levels:
        parent_index = index[..., level.parent].unsqueeze(-1)
        index[..., level.child] = (
            best_child[..., level.child, :].gather(-1, parent_index).squeeze(-1)
        )
    return index, root_value.sum(-1)
