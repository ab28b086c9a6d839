r"""The Add-Tree kernel's Gram matrix from slot features, with a fused backward pass.

[`SlotGram`][treebo.add_tree.slot_gram.SlotGram] computes the Gram matrix of the slot
encoding of [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel] in one pass: for
inputs ``a`` (``S x n x D``) and ``b`` (``S x m x D``) already divided by their
lengthscales, pair weights $w_s$ built from per-point output scales, constants and a
shared component, $K = \sum_s w_s \odot \kappa(\lVert a_s - b_s \rVert^2) +
\text{constants}$, with a backward pass of two batched matrix products per input (no
``S x n x m x D`` temporaries) that never builds the weights' autograd graph. It does
not support double backward.
"""

from __future__ import annotations

import torch
from torch import Tensor

from treebo.gp.correlation import matern52_parts, pairwise_sq_dist


class SlotGram(torch.autograd.Function):
    r"""Add-Tree Gram matrix from slot features, with a fused backward pass.

    Forward: for inputs ``a``: ``*b x S x n x D`` and ``b``: ``*b x S x m x D`` (already
    divided by their lengthscales) and $\kappa_{snm} = \kappa(\lVert a_{sn} - b_{sm}
    \rVert^2)$,

    $$
    K_{nm} = \sum_s e_{snm}\,(\sigma_{sn} \kappa_{snm} + c_{sn})
    + \tau_s\, p_{sn} q_{sm}\, \kappa_{snm},
    $$

    with $e$ the 0/1 indicator that both points have the same vertex in slot $s$
    ($i_{sn} = j_{sm}$), $\sigma$ and $c$ that vertex's output scale and constant,
    and $\tau_s$ the scale of a component shared by the slot's vertices with
    parameters ($p$, $q$: 0/1 indicators that a point has one). The work runs in row
    blocks ([`BLOCK_ELEMENTS`][treebo.gp.correlation.BLOCK_ELEMENTS]), and the
    backward pass recomputes the correlations instead of storing them.

    Backward: with $g_{snm} = G_{nm} w_{snm} \kappa'(r^2_{snm})$ and $w = e\sigma +
    \tau p q^\top$, the input gradients are $2(a_{sn} \sum_m g_{snm} - \sum_m g_{snm}
    b_{sm})$ (and symmetrically for ``b``): two batched matrix products instead of
    ``S x n x m x D`` temporaries. The gradients of $\sigma$, $c$ and $\tau$ are
    reductions of $G \kappa e$, $G e$ and $G \kappa$; no ``S x n x m`` weight tensor
    enters autograd.

    Args (of ``apply``):
        a: ``*b x S x n x D``.
        b: ``*b x S x m x D``.
        ids_a: ``*b x S x n`` integer vertex ids $i$ of ``a``'s points per slot.
        ids_b: ``*b x S x m`` those of ``b``'s points, $j$.
        scale: ``*b x S x n`` output scales $\sigma$.
        offset: ``*b x S x n`` constants $c$, or ``None``.
        tau: ``*b x S`` shared scales, or ``None`` (then ``p`` and ``q`` are ignored).
        p: ``*b x S x n`` 0/1, or ``None``.
        q: ``*b x S x m`` 0/1, or ``None``.
        base_kernel: ``"rbf"`` or ``"matern52"``.

    Batch shapes broadcast.
    """

    @staticmethod
    def forward(
        ctx,
        a: Tensor,
        b: Tensor,
        ids_a: Tensor,
        ids_b: Tensor,
        scale: Tensor,
        offset: Tensor | None,
        tau: Tensor | None,
        p: Tensor | None,
        q: Tensor | None,
        base_kernel: str,
    ) -> Tensor:
        parts = _SlotParts(a, b, ids_a, ids_b, scale, offset, tau, p, q, base_kernel)
        # Small problems keep each block's parts for the backward pass (where they
        # would be recomputed: a quarter of the work); large ones keep nothing.
        keep = any(ctx.needs_input_grad) and parts.elements() <= KEEP_ELEMENTS
        kept = []
        out = None
        for rows in parts.row_blocks():
            k, dk, weight, same_r = parts.block(rows, derivative=keep)
            if keep:
                kept.append((k, dk, weight, same_r))
                terms = k * weight
            else:
                terms = _times(k, weight)
            if offset is not None:
                terms = _plus_product(
                    terms, same_r, parts.rows(offset, rows, 1)[..., None]
                )
            block = terms.sum(-3)
            if rows.stop - rows.start == parts.n:
                out = block
            else:
                out = _rows_into(out, block, rows, parts.n, -2)
        ctx.save_for_backward(a, b, ids_a, ids_b, scale, offset, tau, p, q)
        ctx.base_kernel = base_kernel
        ctx.kept = kept  # intermediates, never returned or changed in place
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        a, b, ids_a, ids_b, scale, offset, tau, p, q = ctx.saved_tensors
        parts = _SlotParts(
            a, b, ids_a, ids_b, scale, offset, tau, p, q, ctx.base_kernel
        )
        # Inputs: a, b, ids_a, ids_b, scale, offset, tau, p, q, base_kernel.
        needs = ctx.needs_input_grad
        need_a, need_b, need_scale, need_offset, need_tau = (
            needs[0],
            needs[1],
            needs[4],
            needs[5],
            needs[6],
        )
        grad_a = grad_b = grad_scale = grad_offset = grad_tau = None
        for i, rows in enumerate(parts.row_blocks()):
            if ctx.kept:
                k, dk, weight, same_r = ctx.kept[i]
            else:
                k, dk, weight, same_r = parts.block(rows, derivative=need_a or need_b)
            G = grad[..., rows, :].unsqueeze(-3)  # *b x 1 x r x m
            if need_a or need_b:
                g = (G * weight).mul_(dk)  # *b x S x r x m, without dk's scale
                two = 2.0 * parts.dk_scale
                a_r = parts.rows(a, rows, 2)
                if need_a:
                    block = (a_r * g.sum(-1, keepdim=True) - g @ b).mul_(two)
                    grad_a = _rows_into(grad_a, block, rows, parts.n, -2)
                if need_b:
                    gt = g.transpose(-1, -2)
                    block = (b * gt.sum(-1, keepdim=True) - gt @ a_r).mul_(two)
                    grad_b = block if grad_b is None else grad_b + block
            if need_offset:
                block = (G * same_r).sum(-1)
                grad_offset = _rows_into(grad_offset, block, rows, parts.n, -1)
            if need_scale or need_tau:
                gk = G * k
                if need_tau:  # sum_nm G k p q, as a matrix-vector product
                    gkq = (gk @ q.unsqueeze(-1)).squeeze(-1)
                    block = (gkq * parts.rows(p, rows, 1)).sum(-1)
                    grad_tau = block if grad_tau is None else grad_tau + block
                if need_scale:
                    block = gk.mul_(same_r).sum(-1)
                    grad_scale = _rows_into(grad_scale, block, rows, parts.n, -1)
        return (
            None if grad_a is None else grad_a.sum_to_size(a.shape),
            None if grad_b is None else grad_b.sum_to_size(b.shape),
            None,
            None,
            None if grad_scale is None else grad_scale.sum_to_size(scale.shape),
            None if grad_offset is None else grad_offset.sum_to_size(offset.shape),
            None if grad_tau is None else grad_tau.sum_to_size(tau.shape),
            None,
            None,
            None,
        )


#: Elements of one block of [`SlotGram`][treebo.add_tree.slot_gram.SlotGram]'s
#: ``S x n x m`` work on the CPU (2 MB in float64). The C allocator recycles
#: temporaries of this size; larger ones go back to the system after each operation
#: and are page-faulted in again on the next, which made every elementwise operation
#: about five times slower at ``n = 3000`` (measured on one core).
BLOCK_ELEMENTS = 2**18

#: Most elements of ``S x n x m`` (times the batch) for which
#: [`SlotGram`][treebo.add_tree.slot_gram.SlotGram]'s forward pass keeps its
#: correlations, derivative factors, weights and indicators for the backward pass (at
#: most four tensors of this size, 32 MB each in float64) instead of recomputing them.
KEEP_ELEMENTS = 2**22


class _SlotParts:
    """Row blocks of [`SlotGram`][treebo.add_tree.slot_gram.SlotGram]'s correlations and
    pair weights, recomputed where needed instead of stored (the forward pass keeps no
    ``S x n x m`` tensor for the backward one)."""

    def __init__(
        self, a, b, ids_a, ids_b, scale, offset, tau, p, q, base_kernel
    ) -> None:
        self.a, self.b, self.ids_a, self.ids_b = a, b, ids_a, ids_b
        self.scale = scale
        self.offset, self.tau, self.p, self.q = offset, tau, p, q
        self.base_kernel = base_kernel
        self.n = a.shape[-2]
        # dk/d(sq) = dk_scale * (the block's derivative factor)
        self.dk_scale = -0.5 if base_kernel == "rbf" else -5.0 / 6.0

    def elements(self) -> int:
        """Elements of one ``*b x S x n x m`` tensor."""
        batch = torch.broadcast_shapes(self.a.shape[:-3], self.b.shape[:-3])
        return batch.numel() * self.b.shape[-3] * self.n * self.b.shape[-2]

    def row_blocks(self) -> list[slice]:
        if self.a.device.type != "cpu":
            return [slice(0, self.n)]
        batch = torch.broadcast_shapes(self.a.shape[:-3], self.b.shape[:-3])
        per_row = max(1, batch.numel() * self.b.shape[-3] * self.b.shape[-2])
        step = max(1, BLOCK_ELEMENTS // per_row)
        return [slice(i, min(i + step, self.n)) for i in range(0, self.n, step)]

    @staticmethod
    def rows(t: Tensor, rows: slice, axis_from_end: int) -> Tensor:
        """``t`` restricted to ``rows`` along its ``n`` axis."""
        index = (Ellipsis, rows) + (slice(None),) * (axis_from_end - 1)
        return t[index]

    def block(
        self, rows: slice, derivative: bool
    ) -> tuple[Tensor, Tensor | None, Tensor, Tensor]:
        """Correlations, their derivative factor (if ``derivative``), pair weights and
        same-vertex indicators of ``rows``: ``*b x S x r x m`` each."""
        sq = pairwise_sq_dist(self.rows(self.a, rows, 2), self.b)
        if self.base_kernel == "rbf":
            k = sq.mul_(-0.5).exp_()
            dk = k if derivative else None  # neither is changed in place later
        else:
            k, dk = matern52_parts(sq)
        ids = self.rows(self.ids_a, rows, 1).unsqueeze(-1)
        same = (ids == self.ids_b.unsqueeze(-2)).to(k.dtype)
        weight = same * self.rows(self.scale, rows, 1).unsqueeze(-1)
        if self.tau is not None:
            shared = self.rows(self.p, rows, 1) * self.tau.unsqueeze(-1)
            weight = torch.addcmul(weight, shared.unsqueeze(-1), self.q.unsqueeze(-2))
        return k, dk, weight, same


def _times(t: Tensor, other: Tensor) -> Tensor:
    """``t * other``, in ``t``'s storage where the shapes allow."""
    if torch.broadcast_shapes(t.shape, other.shape) == t.shape:
        return t.mul_(other)
    return t * other


def _plus_product(t: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """``t + x * y``, in ``t``'s storage where the shapes allow."""
    if torch.broadcast_shapes(t.shape, x.shape, y.shape) == t.shape:
        return t.addcmul_(x, y)
    return torch.addcmul(t, x, y)


def _rows_into(
    full: Tensor | None, block: Tensor, rows: slice, n: int, axis: int
) -> Tensor:
    """Write ``block`` into ``rows`` of ``full`` along ``axis`` (allocated with ``n``
    there on the first block)."""
    if full is None:
        shape = list(block.shape)
        shape[axis] = n
        full = block.new_empty(shape)  # every row is written
    index = (Ellipsis, rows) + (slice(None),) * (-axis - 1)
    full[index] = block
    return full
