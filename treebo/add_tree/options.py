"""Typed settings of the Add-Tree strategies.

Each strategy has one frozen options object whose defaults are the settings that
measured best for it (docs/design.md); two strategies that differ in a default say so in
their own types ([`AddTreeOptions`][treebo.add_tree.options.AddTreeOptions] and
[`AddTreeUCBOptions`][treebo.add_tree.options.AddTreeUCBOptions]), never through a value
that depends on another.

The kernel settings are one typed object,
[`AddTreeKernelOptions`][treebo.add_tree.options.AddTreeKernelOptions]: the kernel,
[`AddTreeGP`][treebo.add_tree.model.AddTreeGP], the loop's strategies and the Ax
integration all read theirs from it, so the list of kernel options and their checks live
here only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

from treebo.add_tree.features import interacting_vertices
from treebo.space import TreeSpace
from treebo.strategies.validation import check_count, check_positive

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
        ancestor_interactions: Add the interaction terms of a vertex's parameters
            with its ancestors' (Ma & Blaschko, 2020, App. E:
            [`AncestorInteractionKernel`][treebo.add_tree.interaction.AncestorInteractionKernel]),
            with a small output-scale prior; best used as one of
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
    ancestor_interactions: bool = False

    def __post_init__(self) -> None:
        if self.base_kernel not in BASE_KERNELS:
            raise ValueError(
                f"base_kernel must be one of {BASE_KERNELS}, got {self.base_kernel!r}."
            )
        object.__setattr__(self, "vertex_bias", validate_vertex_bias(self.vertex_bias))
        validate_sharing(self.share_lengthscales, "share_lengthscales")
        validate_sharing(self.share_outputscales, "share_outputscales")
        for name in ("shared_component", "ancestor_interactions"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}.")

    def as_kwargs(self) -> dict[str, Any]:
        """The options as keyword arguments of
        [`AddTreeGP`][treebo.add_tree.model.AddTreeGP]."""
        return asdict(self)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names (keyword arguments of the model)."""
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


#: How a path is chosen: ``"sum"`` of the per-vertex optima (the paper) or
#: ``"joint"`` (the path whose whole-function UCB is highest).
PATH_SELECTIONS = ("sum", "joint")


LOCAL_MEANS = ("constant", "auto")


@dataclass(frozen=True)
class LocalStepOptions:
    r"""Local refinement of the incumbent (see
    [`LocalSteps`][treebo.add_tree.local_steps.LocalSteps]).

    When the global proposal lies on the incumbent's path within 5% of each
    range of it, the strategy proposes from a GP of the incumbent's
    neighbourhood instead, with outcomes standardized over that
    neighbourhood: it resolves differences far below the global model's noise floor. The
    two settings here are those in which the two Add-Tree strategies differ; the step's
    own settings (radius, noise floor, acquisitions) are
    [`LocalStepSettings`][treebo.add_tree.local_steps.LocalStepSettings].

    Attributes:
        mean: The local model's prior mean: ``"auto"`` fits the residuals of
            the global model's posterior mean while the neighbourhood's values
            spread more than the global model's noise, ``"constant"`` never.
        patience: If positive, a local step also follows this many global
            proposals in a row that did not improve the incumbent.

    Example:
        >>> LocalStepOptions(patience=2).mean
        'auto'
    """

    mean: Literal["constant", "auto"] = "auto"
    patience: int = 0

    def __post_init__(self) -> None:
        if self.mean not in LOCAL_MEANS:
            raise ValueError(f"mean must be one of {LOCAL_MEANS}, got {self.mean!r}.")
        check_count(self.patience, "patience", 0)


def _check_shared_fields(options: AddTreeOptions | AddTreeUCBOptions) -> None:
    """The checks of the fields both Add-Tree options objects have."""
    if not isinstance(options.kernel, AddTreeKernelOptions):
        raise TypeError(
            f"kernel must be AddTreeKernelOptions, got {type(options.kernel).__name__}."
        )
    if options.noise_floor is not None:
        check_positive(options.noise_floor, "noise_floor")
    check_count(options.num_restarts, "num_restarts", 1)
    check_count(options.raw_samples, "raw_samples", 1)
    if options.local is not None and not isinstance(options.local, LocalStepOptions):
        kind = type(options.local).__name__
        raise TypeError(f"local must be LocalStepOptions or None, got {kind}.")


@dataclass(frozen=True)
class AddTreeOptions:
    """Settings of the ``"add_tree"`` strategy: LogEI on an ``AddTreeGP``.

    Attributes:
        kernel: The [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel]'s settings.
        alternative_kernels: Further kernel settings, each fitted beside ``kernel`` at
            every proposal (warm-started from its own last fit); the proposal uses an
            alternative's model where it predicts the data clearly better in
            leave-one-out (its mean gain in
            [`loo_log_densities()`][treebo.gp.fit.loo_log_densities] over the best so
            far exceeds one standard error), else ``kernel``'s. ``None`` (the default):
            ``kernel`` with the interaction terms of the paper's App. E
            (``ancestor_interactions=True``), so that they are used only where the data
            show them (the best learning rate depends on the optimizer chosen below it,
            say); none where ``kernel`` already has them. ``()``: ``kernel``
            alone. An alternative that gives the space
            the same model as ``kernel`` (interaction terms on a space with no vertex of
            parameters below another) is skipped; each other one adds a fit per
            proposal.
            [`alternatives()`][treebo.add_tree.options.AddTreeOptions.alternatives]
            resolves the setting.
        noise_floor: Lower bound on the noise variance of the standardized
            outcomes; ``None``: the run's ``noise`` decides (``1e-4`` where noise is
            inferred, `INFERRED_NOISE_FLOOR`;
            ``1e-6`` for a deterministic objective, `DETERMINISTIC_NOISE_FLOOR`).
        num_restarts: Optimizer starts per path.
        raw_samples: Random points scored to choose the starts.
        local: Local refinement of the incumbent, or ``None`` for none.

    Example:
        >>> from treebo import TreeOptimizer
        >>> from treebo.test_functions import Jenatton
        >>> options = AddTreeOptions(noise_floor=1e-4, local=None)
        >>> from treebo.add_tree import AddTreeStrategy
        >>> opt = TreeOptimizer(Jenatton().space, strategy=AddTreeStrategy(options))
        >>> opt.strategy.options.local is None
        True
    """

    kernel: AddTreeKernelOptions = LOOP_KERNEL_OPTIONS
    alternative_kernels: tuple[AddTreeKernelOptions, ...] | None = None
    noise_floor: float | None = None
    num_restarts: int = 10
    raw_samples: int = 512
    local: LocalStepOptions | None = field(default_factory=LocalStepOptions)

    def __post_init__(self) -> None:
        alternatives = self.alternative_kernels
        if alternatives is not None:
            if not isinstance(alternatives, (tuple, list)) or not all(
                isinstance(k, AddTreeKernelOptions) for k in alternatives
            ):
                raise TypeError(
                    "alternative_kernels must be None or a tuple of "
                    f"AddTreeKernelOptions, got {alternatives!r}."
                )
            object.__setattr__(self, "alternative_kernels", tuple(alternatives))
        _check_shared_fields(self)

    def alternatives(self) -> tuple[AddTreeKernelOptions, ...]:
        """The alternative kernels that ``alternative_kernels`` stands for.

        Example:
            >>> AddTreeOptions().alternatives()[0].ancestor_interactions
            True
            >>> AddTreeOptions(alternative_kernels=()).alternatives()
            ()
        """
        if self.alternative_kernels is not None:
            return self.alternative_kernels
        kernel = self.kernel
        if kernel.ancestor_interactions:
            return ()
        return (replace(kernel, ancestor_interactions=True),)


@dataclass(frozen=True)
class AddTreeUCBOptions:
    r"""Settings of the ``"add_tree_ucb"`` strategy: Add-Tree-GP-UCB.

    Algorithm 2 of Ma & Blaschko (2020): per-vertex UCB optima combined along paths. Its
    defaults differ from [`AddTreeOptions`][treebo.add_tree.options.AddTreeOptions]'
    where that measured better for it: no vertex offsets, no alternative kernel (each
    vertex is maximized on its own parameters, so interaction terms do not apply), a
    plain local model (``mean="constant"``) that also runs after two failed global
    proposals, and proposals moved off a resolved basin.
    [`paper()`][treebo.add_tree.options.AddTreeUCBOptions.paper] gives the paper's loop.

    Attributes:
        kernel: The [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel]'s settings
            (no ancestor terms: each vertex is maximized on its own parameters).
        noise_floor: Lower bound on the noise variance of the standardized
            outcomes; ``None``: the run's ``noise`` decides (as in
            [`AddTreeOptions`][treebo.add_tree.options.AddTreeOptions]).
        num_restarts: Optimizer starts per vertex.
        raw_samples: Random points scored to choose the starts.
        local: Local refinement of the incumbent, or ``None`` for none.
        beta: UCB weight(s); ``None`` gives the paper's $0.2\,d_v \log(2t)$.
        path_selection: ``"joint"`` (the path whose whole-function UCB is
            highest) or ``"sum"`` (the paper's sum of per-vertex optima).
        basin_patience: Local steps in a row without improvement after which
            the incumbent's basin counts as resolved; a global proposal that
            falls back into a resolved basin is replaced by the best one on
            another path (kind ``"away"``). ``None``: never.

    Example:
        >>> AddTreeUCBOptions.paper().path_selection
        'sum'
    """

    kernel: AddTreeKernelOptions = AddTreeKernelOptions(
        vertex_bias="none",
        share_lengthscales="depth",
        share_outputscales="depth",
        shared_component=True,
    )
    noise_floor: float | None = None
    num_restarts: int = 10
    raw_samples: int = 512
    local: LocalStepOptions | None = field(
        default_factory=lambda: LocalStepOptions(mean="constant", patience=2)
    )
    beta: float | None = None
    path_selection: Literal["joint", "sum"] = "joint"
    basin_patience: int | None = 3

    def __post_init__(self) -> None:
        _check_shared_fields(self)
        if self.kernel.ancestor_interactions:
            raise ValueError(
                "kernel: ancestor_interactions is not available with the per-vertex "
                "UCB (add_tree_ucb): each vertex is maximized on its own "
                "parameters; use the add_tree strategy."
            )
        if self.beta is not None:
            check_positive(self.beta, "beta")
        if self.path_selection not in PATH_SELECTIONS:
            raise ValueError(
                f"path_selection must be one of {PATH_SELECTIONS}, "
                f"got {self.path_selection!r}."
            )
        if self.basin_patience is not None:
            check_count(self.basin_patience, "basin_patience", 1)

    @classmethod
    def paper(cls, **changes: object) -> AddTreeUCBOptions:
        """The loop of Ma & Blaschko (2020), Algorithm 2: the path by the sum
        of per-vertex optima, no redirects, local steps only near the
        incumbent (``changes`` override further fields)."""
        preset = {
            "path_selection": "sum",
            "basin_patience": None,
            "local": LocalStepOptions(mean="constant", patience=0),
        }
        return cls(**{**preset, **changes})

    def alternatives(self) -> tuple[AddTreeKernelOptions, ...]:
        """No alternative kernels: the per-vertex UCB uses ``kernel`` alone."""
        return ()
