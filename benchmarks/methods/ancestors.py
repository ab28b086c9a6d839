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

from treebo.add_tree import AddTreeGP, AddTreeKernel, AddTreeOptions, AddTreeStrategy
from treebo.add_tree.fitting import AddTreeFit
from treebo.add_tree.options import AddTreeKernelOptions
from treebo.strategies.base import Observations

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


class FoldedAncestorsFit(AddTreeFit):
    """Builds the model of a :class:`FoldedAncestors` kernel setting with an
    :class:`AncestorReadingKernel`; any other setting as the package does."""

    def build(
        self,
        observations: Observations,
        X: Tensor,
        y: Tensor,
        noise_floor: float,
        kernel: AddTreeKernelOptions | None = None,
    ) -> AddTreeGP:
        kernel = self.kernel_in_use if kernel is None else kernel
        model = super().build(observations, X, y, noise_floor, kernel)
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


def folded_ancestors(options: AddTreeOptions) -> AddTreeStrategy:
    """The ``add_tree`` strategy of ``options`` that understands
    :class:`FoldedAncestors`."""
    return AddTreeStrategy(options, fit=FoldedAncestorsFit.from_options(options))


def folded_ancestors_epsilon_greedy(options: AddTreeOptions) -> EpsilonGreedy:
    """:class:`~benchmarks.methods.exploration.EpsilonGreedy`, likewise."""
    return EpsilonGreedy(options, fit=FoldedAncestorsFit.from_options(options))
