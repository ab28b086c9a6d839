"""The Add-Tree loop whose every vertex term reads its ancestors' parameters.

Ma & Blaschko (2020), App. E, fold a vertex's interaction with its ancestors into the
vertex's own term: $\\kappa(x|_{a(v)} / \\ell_v)$ with $a(v)$ the parameters of $v$
and of every vertex above it, each with a lengthscale of its own in $v$'s term. Tried
as the loop's kernel and not adopted (docs/design.md): the package keeps the separate
interaction terms
(:class:`~treebo.add_tree.interaction.AncestorInteractionKernel`, added with ``+``);
this experiment builds the folded kernel from the kernel's ``reads_ancestors`` hook.

Example:
    >>> from dataclasses import asdict
    >>> from treebo.add_tree.options import LOOP_KERNEL_OPTIONS
    >>> options = FoldedAncestors(**asdict(LOOP_KERNEL_OPTIONS))
    >>> options == LOOP_KERNEL_OPTIONS  # another kernel, so never skipped as equal
    False
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from treebo.add_tree import AddTreeGP, AddTreeKernel, AddTreeStrategy
from treebo.add_tree.options import AddTreeKernelOptions
from treebo.space import TreeSpace

from .exploration import EpsilonGreedy


class AncestorReadingKernel(AddTreeKernel):
    """An Add-Tree kernel whose every vertex term reads its own and its ancestors'
    parameters (a vertex without parameters of its own has a term on its
    ancestors')."""

    reads_ancestors = True


@dataclass(frozen=True)
class FoldedAncestors(AddTreeKernelOptions):
    """Kernel settings of an :class:`AncestorReadingKernel` (``ancestor_interactions``
    must stay off: the folded terms already hold the interactions)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ancestor_interactions:
            raise ValueError("FoldedAncestors already folds the interactions in.")


class FoldedAncestorsMixin:
    """Builds the model of a :class:`FoldedAncestors` kernel setting with an
    :class:`AncestorReadingKernel`; any other setting as the strategy does."""

    def build_model(
        self,
        space: TreeSpace,
        X: Tensor,
        y: Tensor,
        noise_floor: float,
        kernel: AddTreeKernelOptions | None = None,
    ) -> AddTreeGP:
        kernel = self.kernel_options if kernel is None else kernel
        model = super().build_model(space, X, y, noise_floor, kernel)
        if isinstance(kernel, FoldedAncestors):
            plain = model.covar_module
            settings = kernel.as_kwargs()
            del settings["ancestor_interactions"]
            model.covar_module = AncestorReadingKernel(
                plain.dim,
                plain.tree,
                batch_shape=plain.batch_shape,
                categorical_values=plain.categorical_values,
                **settings,
            ).to(X)
        return model


class FoldedAncestorsStrategy(FoldedAncestorsMixin, AddTreeStrategy):
    """The ``add_tree`` strategy that understands :class:`FoldedAncestors`."""


class FoldedAncestorsEpsilonGreedy(FoldedAncestorsMixin, EpsilonGreedy):
    """:class:`~benchmarks.methods.exploration.EpsilonGreedy`, likewise."""
