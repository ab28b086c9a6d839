r"""The interface between the loop and a model family:
[`Strategy`][treebo.strategies.base.Strategy].

[`TreeOptimizer`][treebo.loop.optimizer.TreeOptimizer] keeps the history, the pending
evaluations, the initial design, failures and checkpoints. Everything model-specific
happens in a *strategy*: given the [`Observations`][treebo.strategies.base.Observations]
so far it returns a [`Proposal`][treebo.strategies.base.Proposal] (fit a model, build an
acquisition, optimize it). A strategy has a typed, frozen options object, and may keep
state between proposals (e.g. the last hyper-parameters, to warm-start the next fit)
that it writes into checkpoints through
[`Strategy.state_dict()`][treebo.strategies.base.Strategy.state_dict], so that a resumed
run proposes exactly what the uninterrupted run would have.

New model families register a strategy under a name, which
``TreeOptimizer(strategy=...)`` and ``minimize(strategy=...)`` then accept::

    @register_strategy
    class MyStrategy(Strategy):
        name = "my_model"
        options_type = MyOptions

        def propose(self, observations):
            ...
            return Proposal(candidate, kind="bo")
"""

from __future__ import annotations

import copy
import importlib
import importlib.metadata
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any, ClassVar

import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor

from treebo.optim.pool import optimize_acqf_pool
from treebo.space import ConfigurationError, TreeSpace

#: Relative tolerance (of each column's range) under which a proposal repeats
#: an evaluated point.
REPEAT_TOL = 1e-4


def is_observed(space: TreeSpace, x: Tensor, X: Tensor, tol: float) -> bool:
    """Whether ``x`` (``d``) repeats a row of ``X`` (``n x d``) to ``tol`` of
    each column's range."""
    width = (space.bounds[1] - space.bounds[0]).to(X)
    gap = (X - x).abs() / width.clamp_min(torch.finfo(X.dtype).tiny)
    return bool((gap.amax(-1) <= tol).any())


@dataclass(frozen=True)
class Observations:
    """What a strategy sees when asked for a proposal.

    Attributes:
        space: The search space.
        X: ``n x d`` encoded configurations of every trial, on the loop's
            device and dtype.
        y: ``n x 1`` scores to *maximize*: the values (negated when the loop
            minimizes) standardized over the successful trials, so that a
            strategy sees the same scores for ``c * f + b`` as for ``f``;
            failed trials hold the worst score.
        failed: ``n`` booleans, true for failed trials.
        kinds: Every trial's ``kind``.
        X_pending: ``p x d`` configurations asked for and not yet told.
        seed: The seed of this proposal (derived from the run's seed and the
            number of trials, so a resumed run uses the same one).
        n_initial: The size of the initial design.
        noise: What the run declared about the objective's noise
            ([`validate_noise()`][treebo.gp.noise.validate_noise]): ``"infer"``,
            ``"deterministic"`` or ``"known"``.
        yvar: With known noise, ``n x 1`` noise variances of ``y`` (on its
            standardized scale), else ``None``.
        X_left_out: ``k x d`` configurations that were evaluated but whose scores a
            strategy left out of its model (outliers,
            [`screen_far_out()`][treebo.add_tree.outliers.screen_far_out]), or
            ``None``: like pending ones, they are not proposed again.
    """

    space: TreeSpace
    X: Tensor
    y: Tensor
    failed: Tensor
    kinds: tuple[str, ...]
    X_pending: Tensor
    seed: int
    n_initial: int
    noise: str = "infer"
    yvar: Tensor | None = None
    X_left_out: Tensor | None = None

    @property
    def incumbent(self) -> Tensor:
        """``d``: the best configuration so far (the first of equals)."""
        return self.X[int(self.y.squeeze(-1).argmax())]

    @property
    def X_unseen(self) -> Tensor:
        """``(p + k) x d``: the configurations a model must not see and a proposal
        must avoid, the pending ones and those left out."""
        if self.X_left_out is None:
            return self.X_pending
        return torch.cat([self.X_pending, self.X_left_out.to(self.X_pending)])

    @property
    def scores(self) -> Tensor:
        """``n`` scores to maximize with ``-inf`` for failed trials."""
        return self.y.squeeze(-1).masked_fill(self.failed, -torch.inf)


@dataclass(frozen=True)
class Proposal:
    """A strategy's answer.

    Attributes:
        candidate: ``d`` encoded configuration to evaluate next.
        kind: The trial kind recorded for it (e.g. ``"bo"``).
        timings: Seconds the proposal spent, by stage (``"fit"``, ``"optimize"``,
            ...), for benchmarks
            ([`TreeOptimizer.last_timings`][treebo.loop.optimizer.TreeOptimizer]).
    """

    candidate: Tensor
    kind: str
    timings: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Prediction:
    r"""A model's posterior of the latent scores $f(x_i)$ at evaluated configurations.

    Attributes:
        mean: ``n`` posterior means, on the scale of ``Observations.y``.
        variance: ``n`` posterior variances of $f(x_i)$ (noise excluded: the
            uncertainty of the true value, not of a new evaluation).
    """

    mean: Tensor
    variance: Tensor


class Strategy(ABC):
    """Turns the observations of a run into the next configuration to evaluate.

    Subclasses set `name` (the name ``TreeOptimizer(strategy=...)`` takes) and
    `options_type` (a frozen dataclass; its defaults are the strategy's defaults), and
    implement [`propose()`][treebo.strategies.base.Strategy.propose].

    Args:
        options: An instance of `options_type` (default: its defaults).
        device: Device of the models (default CPU).
        dtype: Floating point type of the models (default float64).

    Attributes:
        last_model: The model of the last proposal (``None`` before the first fit,
            and for a strategy without a model); what
            [`TreeOptimizer.last_model`][treebo.loop.optimizer.TreeOptimizer.last_model]
            returns.
    """

    name: ClassVar[str]
    options_type: ClassVar[type]
    #: The noise declarations the strategy's models honour: ``"infer"`` (the models
    #: fit the noise), ``"deterministic"`` (the noise held near a floor, so that
    #: the models interpolate) and ``"known"`` (``noise=<variance>``:
    #: ``Observations.yvar``). The loop refuses the others by name, before any
    #: evaluation.
    noise_declarations: ClassVar[frozenset[str]] = frozenset({"infer"})
    #: Whether proposals avoid ``Observations.X_pending`` (configurations asked for
    #: and not yet told), so that ``ask(n)`` returns a batch of distinct ones; the
    #: loop refuses ``ask(n > 1)`` otherwise.
    handles_pending: ClassVar[bool] = False

    def __init__(
        self,
        options: Any | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        if options is None:
            options = self.options_type()
        # Exactly the type: a subclass holds another model's settings.
        if type(options) is not self.options_type:
            raise TypeError(
                f"options of the {self.name!r} model must be "
                f"{self.options_type.__name__}, got {type(options).__name__}."
            )
        if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise TypeError(
                f"dtype must be a floating point torch.dtype, got {dtype!r}."
            )
        if dtype not in (torch.float32, torch.float64):
            raise ConfigurationError(
                f"dtype must be torch.float64 (the default) or torch.float32, got "
                f"{dtype}: a GP's Cholesky factor fails in half precision."
            )
        self.options = options
        self.device = torch.device("cpu") if device is None else torch.device(device)
        check_device(self.device)
        self.dtype = dtype
        self.last_model: Any = None

    def claim(self) -> Strategy:
        """Mark the strategy as serving one run, and return it.

        A strategy keeps state between proposals (its last fit warm-starts the next),
        so an instance serves one optimizer.

        Raises:
            ValueError: If another optimizer already holds it.
        """
        if getattr(self, "_claimed", False):
            raise ValueError(
                f"strategy: this {type(self).__name__} already serves another "
                "optimizer; give each run a strategy of its own (its fits are "
                "warm-started from its last run's)."
            )
        self._claimed = True
        return self

    def scratch_copy(self) -> Strategy:
        """A deep copy to fit other observations with, this strategy left as it is
        (e.g. to compare fits with and without some rows). The last model is not
        copied: the copy's ``last_model`` is ``None`` until it fits its own."""
        memo = {} if self.last_model is None else {id(self.last_model): None}
        return copy.deepcopy(self, memo)

    def validate_space(self, space: TreeSpace) -> None:
        """Refuse a space this model cannot handle, before any evaluation.

        Raises:
            ConfigurationError: Naming what the model does not support.
        """
        del space  # every space by default

    def snap(self, space: TreeSpace, X: Tensor) -> Tensor:
        """``X`` (``n x d`` encodings) moved onto the configurations this strategy
        proposes from; the loop applies it to its initial design. The default
        leaves ``X`` as it is; a grid model moves each row to its nearest grid
        point.
        """
        del space
        return X

    @abstractmethod
    def propose(self, observations: Observations) -> Proposal:
        """The next configuration, from at least one successful observation.

        Raise `botorch.exceptions.ModelFittingError` when no model can be fitted; the
        loop then proposes a random configuration.
        """

    def acquisition(self, observations: Observations) -> AcquisitionFunction:
        """The acquisition function, on a model fitted to ``observations``
        (pending configurations included), that
        [`propose_from()`][treebo.strategies.base.Strategy.propose_from] scores a pool
        with.

        Raises:
            ConfigurationError: If the strategy has none (the default).
        """
        raise ConfigurationError(
            f"strategy={self.name!r} cannot choose among candidates: it "
            "defines no acquisition function to score them with."
        )

    def propose_from(self, observations: Observations, candidates: Tensor) -> Proposal:
        """The next configuration among ``candidates``: the row of highest
        [`acquisition()`][treebo.strategies.base.Strategy.acquisition] value (scored in
        chunks: [`optimize_acqf_pool()`][treebo.optim.pool.optimize_acqf_pool]).

        Args:
            observations: As for [`propose()`][treebo.strategies.base.Strategy.propose].
            candidates: ``m x d`` valid encodings, none evaluated or pending,
                on the observations' device and dtype.
        """
        index, _ = optimize_acqf_pool(self.acquisition(observations), candidates)
        return Proposal(candidates[index], "bo")

    def predict(self, observations: Observations) -> Prediction | None:
        """The model's posterior of the scores at ``observations.X``.

        The loop recommends the evaluated configuration of highest posterior mean
        where the objective is noisy (the best observed value is then partly luck) and
        reports its posterior standard deviation; ``None`` (the default: the strategy
        has no such model) recommends the best observed one.

        Returns:
            A [`Prediction`][treebo.strategies.base.Prediction] of ``n`` scores on
            the scale of ``observations.y``, or ``None``.
        """
        del observations
        return None

    def variant(self) -> str | None:
        """What sets this instance apart from the strategy its options make (parts
        given to its constructor, say), as text a checkpoint records; ``None`` for
        none."""
        return None

    def options_dict(self) -> dict[str, Any]:
        """The options as plain data (written into checkpoints)."""
        return asdict(self.options) if is_dataclass(self.options) else {}

    def state_dict(self) -> dict[str, Any]:
        """JSON-serializable state that later proposals depend on."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what [`state_dict()`][treebo.strategies.base.Strategy.state_dict]
        returned."""
        del state  # stateless by default


def check_device(device: torch.device) -> None:
    """Refuse a device this PyTorch build or machine does not have, before anything
    is evaluated.

    Raises:
        ConfigurationError: Naming ``device``.
    """
    available = {
        "cuda": torch.cuda.is_available,
        "mps": lambda: torch.backends.mps.is_available(),
    }.get(device.type, lambda: True)
    if not available():
        raise ConfigurationError(
            f"device: {device.type!r} is not available to this PyTorch "
            f"({torch.__version__}) on this machine; use device='cpu'."
        )


def require_real_parameters(space: TreeSpace, name: str) -> None:
    """Refuse a space with any parameter that is not a
    [`Real`][treebo.space.parameters.Real].

    Raises:
        ConfigurationError: Naming the first such parameter and the strategy ``name``.
    """
    others = [
        space.parameter_names[c]
        for c in space.choice_columns
        + space.integer_columns
        + space.categorical_columns
    ]
    if others:
        raise ConfigurationError(
            f"strategy={name!r} takes spaces of real parameters only; "
            f"{others[0]!r} is not a real parameter."
        )


STRATEGIES: dict[str, type[Strategy]] = {}

#: The entry-point group through which packages add strategies, treebo's own
#: included (``[project.entry-points."treebo.strategies"] my_model =
#: "my_pkg:MyStrategy"``).
ENTRY_POINT_GROUP = "treebo.strategies"

_entry_points_loaded = False


def strategy_entry_points() -> list[importlib.metadata.EntryPoint]:
    """The installed packages' strategy entry points, treebo's first (read from
    package metadata: nothing is imported)."""
    entries = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    return sorted(entries, key=lambda e: not e.value.startswith("treebo."))


def load_strategies() -> dict[str, type[Strategy]]:
    """Every registered strategy by name, after loading the strategies of the
    ``treebo.strategies`` entry points (once; treebo's built-in families are
    declared there too; an entry point that fails to load is skipped with a
    warning).

    Example:
        >>> {"add_tree", "bktf", "treed"} <= set(load_strategies())
        True
    """
    global _entry_points_loaded
    if not _entry_points_loaded:
        _entry_points_loaded = True
        for entry in strategy_entry_points():
            try:
                register_strategy(entry.load())
            except Exception as err:  # another package's bug must not stop treebo
                warnings.warn(
                    f"the strategy entry point {entry.name!r} ({entry.value}) did not "
                    f"load: {err}",
                    RuntimeWarning,
                    stacklevel=2,
                )
    return STRATEGIES


def register_strategy(cls: type[Strategy]) -> type[Strategy]:
    """Class decorator: make ``cls`` available as ``strategy=cls.name``."""
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        raise TypeError("register_strategy takes a Strategy subclass.")
    STRATEGIES[cls.name] = cls
    return cls


def strategy_identity(strategy: Strategy) -> str:
    """What a checkpoint records of a strategy: its registered name, and for any
    other class (a subclass that changes behaviour) the class's qualified name too,
    so that a variant's checkpoint does not resume under the registered strategy.

    Example:
        >>> import treebo.add_tree
        >>> strategy_identity(make_strategy("add_tree"))
        'add_tree'
    """
    cls = type(strategy)
    variant = strategy.variant()
    if STRATEGIES.get(strategy.name) is cls:
        return strategy.name if variant is None else f"{strategy.name} ({variant})"
    name = f"{cls.__module__}.{cls.__qualname__}"
    return f"{strategy.name} ({name}{'' if variant is None else ', ' + variant})"


def make_strategy(strategy: str | Strategy) -> Strategy:
    """The strategy that ``strategy`` stands for.

    Args:
        strategy: A [`Strategy`][treebo.strategies.base.Strategy] (returned as it
            is), or a registered name (``"add_tree"``, ...: that strategy with its
            default options).

    Raises:
        ValueError: If no strategy of that name is registered.
        TypeError: If ``strategy`` is neither a name nor a strategy.

    Example:
        >>> import treebo.add_tree
        >>> make_strategy("add_tree_ucb").name
        'add_tree_ucb'
        >>> strategy = treebo.add_tree.AddTreeStrategy()
        >>> make_strategy(strategy) is strategy
        True
    """
    if isinstance(strategy, Strategy):
        return strategy
    registry = load_strategies()
    if isinstance(strategy, str):
        if strategy not in registry:
            raise ValueError(
                f"strategy must be one of {sorted(registry)}, got {strategy!r}."
            )
        return registry[strategy]()
    raise TypeError(
        f"strategy must be a strategy name ({sorted(registry)}) or a Strategy, got "
        f"{type(strategy).__name__}; options go to the strategy's constructor, e.g. "
        "AddTreeStrategy(AddTreeOptions(...))."
    )


def strategy_from_model(model: Any) -> Strategy:
    """The strategy of the deprecated ``model=`` argument: a name, a strategy, or a
    strategy's options object (the first registered strategy whose
    ``options_type`` it is).

    Raises:
        ValueError: If no strategy of that name is registered.
        TypeError: If ``model`` is none of these.
    """
    if isinstance(model, str | Strategy):
        return make_strategy(model)
    registry = load_strategies()
    for cls in registry.values():  # built-in strategies register first
        if type(model) is cls.options_type:
            return cls(model)
    raise TypeError(
        f"model must be a strategy name ({sorted(registry)}), the options of "
        f"one, or a Strategy, got {type(model).__name__}."
    )


def resolve_strategy(strategy: str | Strategy | None, model: Any) -> Strategy:
    """The strategy of ``strategy=`` (default ``"add_tree"``), or of the deprecated
    ``model=`` (with a ``FutureWarning``), as the loop's entry points take them.

    Raises:
        TypeError: If both are given, or either is of the wrong type.
        ValueError: If no strategy of the name given is registered.
    """
    if model is None:
        return make_strategy("add_tree" if strategy is None else strategy)
    if strategy is not None:
        raise TypeError("give strategy= only; model= is its deprecated alias.")
    warnings.warn(
        "model= is deprecated and will be removed in treebo 0.3; use strategy= with "
        "a name or a Strategy (options go to its constructor, e.g. "
        "strategy=AddTreeStrategy(AddTreeOptions(...))).",
        FutureWarning,
        stacklevel=3,
    )
    return strategy_from_model(model)
