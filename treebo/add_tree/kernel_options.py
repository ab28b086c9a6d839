"""The settings of [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel], as one typed
object.

The kernel, [`AddTreeGP`][treebo.add_tree.model.AddTreeGP], the loop's strategies and
the Ax integration all read their kernel settings from
[`AddTreeKernelOptions`][treebo.add_tree.kernel_options.AddTreeKernelOptions], so the
list of options and their checks live here only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal

from treebo.add_tree.features import interacting_vertices
from treebo.space import TreeSpace

BASE_KERNELS = ("rbf", "matern52")
SHARING = ("none", "depth", "all")
VERTEX_BIAS = ("none", "empty", "all")

Sharing = Literal["none", "depth", "all"]
VertexBias = Literal["none", "empty", "all"]
BaseKernel = Literal["rbf", "matern52"]


def validate_sharing(share: str, name: str) -> None:
    """Raise a ``ValueError`` naming ``name`` unless ``share`` is in ``SHARING``."""
    if share not in SHARING:
        raise ValueError(f"{name} must be one of {SHARING}, got {share!r}.")


def validate_vertex_bias(vertex_bias: bool | str) -> str:
    """Normalize ``vertex_bias`` (``True`` -> ``"empty"``, ``False`` -> ``"none"``)."""
    if isinstance(vertex_bias, bool):
        return "empty" if vertex_bias else "none"
    if vertex_bias not in VERTEX_BIAS:
        raise ValueError(
            f"vertex_bias must be a bool or one of {VERTEX_BIAS}, got {vertex_bias!r}."
        )
    return vertex_bias


@dataclass(frozen=True)
class AddTreeKernelOptions:
    """Structural settings of an
    [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel].

    The defaults are Definition 4 of Ma & Blaschko (2020): one RBF kernel per vertex
    with its own ARD lengthscales and output scale, nothing shared.
    `LOOP_KERNEL_OPTIONS` holds the settings of treebo's loop.

    Attributes:
        base_kernel: Per-vertex correlation, ``"rbf"`` or ``"matern52"``.
        vertex_bias: Learned constants per vertex: ``"none"``, ``"empty"``
            (vertices without continuous parameters) or ``"all"`` (a random
            offset per branch).
        share_lengthscales: ``"none"``, ``"depth"`` (vertices at one depth
            share their lengthscales) or ``"all"``.
        share_outputscales: ``"none"``, ``"depth"`` or ``"all"``, likewise.
        shared_component: Add a function per slot (per depth of a plain tree)
            that all of the slot's vertices share.
        inherit_ancestors: Each vertex's kernel also reads its ancestors'
            parameters, so the effect of a shared parameter may differ
            between branches (Ma & Blaschko, 2020, App. E), branches without
            parameters of their own included.
        ancestor_interactions: Keep each vertex's own term and add a separate
            interaction term on its and its ancestors' parameters, with a
            small output-scale prior (Ma & Blaschko, 2020, App. E); best used as one of
            ``AddTreeOptions.alternative_kernels``.

    Example:
        >>> opts = AddTreeKernelOptions(share_lengthscales="depth")
        >>> opts.as_kwargs()["share_lengthscales"]
        'depth'
    """

    base_kernel: BaseKernel = "rbf"
    vertex_bias: VertexBias = "none"
    share_lengthscales: Sharing = "none"
    share_outputscales: Sharing = "none"
    shared_component: bool = False
    inherit_ancestors: bool = False
    ancestor_interactions: bool = False

    def __post_init__(self) -> None:
        if self.base_kernel not in BASE_KERNELS:
            raise ValueError(
                f"base_kernel must be one of {BASE_KERNELS}, got {self.base_kernel!r}."
            )
        object.__setattr__(self, "vertex_bias", validate_vertex_bias(self.vertex_bias))
        validate_sharing(self.share_lengthscales, "share_lengthscales")
        validate_sharing(self.share_outputscales, "share_outputscales")
        for name in ("shared_component", "inherit_ancestors", "ancestor_interactions"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}.")
        if self.inherit_ancestors and self.ancestor_interactions:
            raise ValueError(
                "inherit_ancestors and ancestor_interactions cannot both be set: "
                "choose folded (inherit_ancestors) or separate interaction terms."
            )

    def as_kwargs(self) -> dict[str, Any]:
        """The options as keyword arguments of ``AddTreeKernel`` / ``AddTreeGP``."""
        return asdict(self)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names (keyword arguments of the kernel and the model)."""
        return tuple(f.name for f in fields(cls))


#: The kernel of treebo's loop
#: ([`AddTreeOptions`][treebo.add_tree.options.AddTreeOptions]):
#: lengthscales and output scales shared by depth, a learned offset per
#: vertex, and a shared component per depth, so that an unexplored branch
#: inherits what its siblings taught the model.
LOOP_KERNEL_OPTIONS = AddTreeKernelOptions(
    vertex_bias="all",
    share_lengthscales="depth",
    share_outputscales="depth",
    shared_component=True,
)


def distinct_kernel(
    kernel: AddTreeKernelOptions, main: AddTreeKernelOptions, space: TreeSpace
) -> bool:
    """Whether ``kernel`` gives ``space`` a different model than ``main``
    (interaction terms change nothing where no vertex with parameters lies
    below another)."""
    if kernel.ancestor_interactions and not bool(
        interacting_vertices(space.tree).any()
    ):
        kernel = replace(kernel, ancestor_interactions=False)
    return kernel != main
