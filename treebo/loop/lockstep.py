r"""Many BO runs at once: their model fits evaluated as batched models.

An experiment of many independent runs (seeds, tasks that share a search space,
variants of a method) spends most of its time fitting hyper-parameters, and at a few
dozen points one evaluation of the marginal likelihood and its gradient is mostly
Python and dispatch overhead, about the same whether the kernel matrix holds one
run's points or thirty runs'.
[`run_in_lockstep()`][treebo.loop.lockstep.run_in_lockstep] runs each function in its
own thread, one thread at a time, and switches only where a fit asks for the marginal
likelihood (the seam: [`objective_closure`][treebo.gp.fit.objective_closure], set in
each run's thread). Once every run has asked (or ended), the
requests of models with the same [`fingerprint()`][treebo.loop.lockstep.fingerprint]
are evaluated as one model with a batch dimension, the runs' hyper-parameters and data
stacked along it (runs with fewer points padded to the most, the pads without
covariance:
[`PaddedMarginalLogLikelihood`][treebo.gp.exact_mll.PaddedMarginalLogLikelihood]), and
each run receives its own value and gradient:

$$
\mathcal L(\theta_1, \dots, \theta_R) = \sum_r \log p(y_r \mid X_r, \theta_r),
\qquad
\frac{\partial \mathcal L}{\partial \theta_r}
= \frac{\partial \log p(y_r \mid X_r, \theta_r)}{\partial \theta_r}.
$$

Each run keeps its own optimizer (BoTorch's L-BFGS-B through
[`fit_model()`][treebo.gp.fit.fit_model]), so it follows the path it would follow
alone: the results equal the one-by-one runs' up to the last bits of the batched
arithmetic. Each run sees its own warnings filters and its own global random state
(both started from the caller's), so BoTorch's retries behave as in a run alone. A
batched evaluation that fails or warns (a Cholesky factor that needs jitter) is not
used: each run in it evaluates its own model instead. Everything else (the
acquisition, the loop's bookkeeping) runs in each run's thread, one run at a time.
"""

from __future__ import annotations

import copy
import threading
import warnings
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch
from botorch.optim.closures import get_loss_closure_with_grads
from botorch.optim.utils import get_parameters
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from treebo.gp.exact_mll import (
    CholeskyMarginalLogLikelihood,
    PaddedMarginalLogLikelihood,
)
from treebo.gp.fit import objective_closure

T = TypeVar("T")

#: The objectives whose evaluations are batched (others evaluate one by one).
BATCHED_OBJECTIVES = (ExactMarginalLogLikelihood, CholeskyMarginalLogLikelihood)

#: Tensors (buffers or attributes) that hold each run's data, stacked along the batch
#: dimension: the known noise of a fixed-noise likelihood, the outcome transform's
#: statistics (a fit does not read them; a stacked model's posterior does).
_DATA_TENSORS = ("noise_covar.noise", "outcome_transform.means")
_DATA_TENSORS += ("outcome_transform.stdvs", "outcome_transform._stdvs_sq")
#: Data tensors with a value per training point (padded with ones).
_POINTWISE = ("noise_covar.noise",)
#: Attributes that hold each run's data or state (a batched evaluation trains).
_DATA_ATTRIBUTES = ("train_inputs", "train_targets", "prediction_strategy", "training")

_fingerprints: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def fingerprint(model: torch.nn.Module) -> tuple:
    """What models must share to be stacked: every submodule's class, settings
    (public attributes of simple types and tensors), parameter shapes and buffers,
    except the data of each run (training inputs and targets, known noise and the
    outcome transform's statistics) and the train or eval mode.

    Computed once per model object.
    """
    cached = _fingerprints.get(model)
    if cached is None:
        parts: list[Any] = [model.train_inputs[0].shape[-1]]
        for name, module in model.named_modules():
            parts.append((name, type(module).__qualname__))
            for key, value in sorted(vars(module).items()):
                if key.startswith("_") or key in _DATA_ATTRIBUTES:
                    continue
                if f"{name}.{key}".endswith(_DATA_TENSORS):
                    value = (value.dtype, value.dim())
                parts.append((key, _describe(value)))
            for key, p in module._parameters.items():
                parts.append((key, None if p is None else (tuple(p.shape), p.dtype)))
            for key, b in module._buffers.items():
                full = f"{name}.{key}" if name else key
                if b is None:
                    continue
                data = full.endswith(_DATA_TENSORS)
                parts.append((key, (b.dtype, b.dim()) if data else _describe(b)))
        cached = _fingerprints[model] = tuple(parts)
    return cached


def _describe(value: Any) -> Any:
    """A hashable description of a module attribute."""
    if isinstance(value, Tensor):
        array = value.detach().cpu()
        return (tuple(array.shape), str(array.dtype), array.numpy().tobytes())
    if value is None or isinstance(value, bool | int | float | str | torch.dtype):
        return value
    if isinstance(value, tuple | list):
        return tuple(_describe(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((repr(k), _describe(v)) for k, v in value.items()))
    return type(value).__qualname__


def _lookup(module: torch.nn.Module, name: str) -> Tensor:
    *path, leaf = name.split(".")
    for part in path:
        module = getattr(module, part)
    return getattr(module, leaf)


def _assign(module: torch.nn.Module, name: str, value: Tensor) -> None:
    *path, leaf = name.split(".")
    for part in path:
        module = getattr(module, part)
    if isinstance(value, torch.nn.Parameter):
        module.register_parameter(leaf, value)
    elif leaf in module._buffers:
        module.register_buffer(leaf, value)
    else:
        setattr(module, leaf, value)


class _Template:
    """A copy of a model whose parameters and data are replaced by stacks of other
    models' (of the same [`fingerprint()`][treebo.loop.lockstep.fingerprint])."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = copy.deepcopy(model)
        self.parameter_names = [n for n, _ in model.named_parameters()]
        self.data_tensors = [
            f"{name}.{key}" if name else key
            for name, module in model.named_modules()
            for key, value in [*module._buffers.items(), *vars(module).items()]
            if isinstance(value, Tensor) and f"{name}.{key}".endswith(_DATA_TENSORS)
        ]
        self.batch_shapes = []  # kernels, means, likelihoods with a batch shape
        for module in self.model.modules():
            shape = getattr(module, "batch_shape", None)
            if module is self.model or not isinstance(shape, torch.Size):
                continue
            try:
                module.batch_shape = shape
            except AttributeError:  # derived from other attributes
                continue
            self.batch_shapes.append((module, shape))

    def load(self, models: Sequence[torch.nn.Module]) -> torch.nn.Module:
        """The copy with ``models``' hyper-parameters, data buffers and training
        data stacked along a new leading dimension, those with fewer training points
        padded to the most (inputs with copies of their first point, targets with
        zeros, known noise with ones)."""
        batched = self.model
        n = max(int(m.train_targets.shape[-1]) for m in models)
        with torch.no_grad():
            for name in self.parameter_names:
                stacked = torch.stack([_lookup(m, name) for m in models])
                _assign(batched, name, torch.nn.Parameter(stacked))
            for name in self.data_tensors:
                tensors = [_lookup(m, name) for m in models]
                if name.endswith(_POINTWISE) and all(
                    t.shape[-1] == m.train_targets.shape[-1]
                    for t, m in zip(tensors, models, strict=True)
                ):
                    tensors = [_grow(t, n, 1.0) for t in tensors]
                _assign(batched, name, torch.stack(tensors))
        X = torch.stack([_grow(m.train_inputs[0], n) for m in models])
        y = torch.stack([_grow(m.train_targets, n, 0.0) for m in models])
        batched.set_train_data(inputs=(X,), targets=y, strict=False)
        for module, shape in self.batch_shapes:
            module.batch_shape = torch.Size([len(models)]) + shape
        return batched


def _grow(tensor: Tensor, size: int, fill: float | None = None) -> Tensor:
    """``tensor`` padded to ``size`` entries: ``n x d`` inputs (no ``fill``) with
    copies of their first row, other tensors along their last dimension with
    ``fill``."""
    if fill is None:  # n x d inputs: copies of the first point
        pads = tensor[:1].expand(size - tensor.shape[-2], tensor.shape[-1])
        return torch.cat([tensor, pads], dim=-2)
    pads = tensor.new_full((*tensor.shape[:-1], size - tensor.shape[-1]), fill)
    return torch.cat([tensor, pads], dim=-1)


def stack_models(models: Sequence[torch.nn.Module]) -> torch.nn.Module:
    """One model with a leading batch dimension holding ``models``' hyper-parameters
    and training data.

    Args:
        models: ``R`` exact GPs with one output and no batch shape, of one
            [`fingerprint()`][treebo.loop.lockstep.fingerprint] and with equal numbers
            of training points.

    Raises:
        ValueError: If ``models`` have different numbers of training points or
            fingerprints.

    Returns:
        A copy of ``models[0]`` whose parameters are ``R x ...`` stacks of the models'
        (new leaf tensors), trained on the ``R x n x d`` stacked inputs and ``R x n``
        targets, with the models' known noise and outcome transforms' statistics:
        its marginal likelihood is the ``R`` models' values, and its posterior at
        ``R x q x d`` points each model's at its ``q``.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> X = torch.rand(2, 10, 1, dtype=torch.float64)
        >>> models = [SingleTaskGP(x, torch.sin(6 * x)) for x in X]
        >>> stack_models(models).covar_module.raw_lengthscale.shape
        torch.Size([2, 1, 1])
    """
    sizes = {int(m.train_targets.shape[-1]) for m in models}
    if len(sizes) > 1:
        raise ValueError(
            f"models must have equal numbers of training points, got {sorted(sizes)}."
        )
    if len({fingerprint(m) for m in models}) > 1:
        raise ValueError("models must share one fingerprint (class, settings, shapes).")
    return _Template(models[0]).load(models)


@dataclass
class _Request:
    """One run's request for its marginal likelihood and gradient."""

    mll: ExactMarginalLogLikelihood
    names: list[str]
    result: tuple[Tensor, tuple[Tensor | None, ...]] | None = None


class _Context:
    """The global state each run switches in and out: the warnings filters and
    the global random generators (CPU, CUDA where initialized, NumPy).

    A run may be suspended inside a ``warnings.catch_warnings()`` block (BoTorch's
    fit records its optimizer's warnings in one), and Python 3.11's warnings state
    is process-wide with no public way to switch it per thread, so the runner
    switches the module's filters and handlers itself (Python 3.14's
    context-aware warnings will make this unnecessary).
    """

    def __init__(self) -> None:
        self.save()

    def save(self) -> None:
        self.filters = warnings.filters
        self.showwarning = warnings.showwarning
        self.showwarnmsg = warnings._showwarnmsg_impl  # type: ignore[attr-defined]
        self.torch_rng = torch.get_rng_state()
        self.cuda_rng = None
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            self.cuda_rng = torch.cuda.get_rng_state_all()
        self.numpy_rng = np.random.get_state()

    def restore(self) -> None:
        warnings.filters = self.filters
        warnings.showwarning = self.showwarning
        warnings._showwarnmsg_impl = self.showwarnmsg  # type: ignore[attr-defined]
        warnings._filters_mutated()  # type: ignore[attr-defined]
        torch.set_rng_state(self.torch_rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)
        np.random.set_state(self.numpy_rng)

    def copy(self) -> _Context:
        other = copy.copy(self)
        other.filters = list(self.filters)
        return other


class _Run(threading.Thread):
    """A run's thread: it holds the baton from a resume to its next request."""

    def __init__(self, lockstep: Lockstep, function: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.lockstep, self.function = lockstep, function
        self.resume = threading.Event()
        self.context = lockstep.context.copy()
        self.request: _Request | None = None
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = False

    def run(self) -> None:
        # The seam: fits in this thread (its own context) go through the lockstep.
        objective_closure.set(self.lockstep.closure)
        self.resume.wait()
        self.resume.clear()
        self.context.restore()
        try:
            self.result = self.function()
        except BaseException as error:  # handed to the caller
            self.error = error
        finally:
            self.done = True
            self.lockstep.yielded.set()

    def ask(self, request: _Request) -> None:
        """Hand the baton back with ``request`` and wait to resume."""
        self.request = request
        self.context.save()
        self.lockstep.yielded.set()
        self.resume.wait()
        self.resume.clear()
        self.context.restore()


class Lockstep:
    """Runs functions in lockstep, their model fits batched (module docstring).

    Most code calls [`run_in_lockstep()`][treebo.loop.lockstep.run_in_lockstep].

    Args:
        functions: Callables without arguments.

    Attributes:
        rounds: Rounds in which some run asked for an evaluation.
        evaluations: Batched evaluations (one per group of stackable requests and
            round).
        batched: Requests answered by a batched evaluation.
        fallbacks: Requests evaluated one by one because their batched evaluation
            failed or warned.
    """

    def __init__(self, functions: Sequence[Callable[[], Any]]) -> None:
        self.context = _Context()
        self.yielded = threading.Event()
        self.runs = [_Run(self, f) for f in functions]
        self.templates: dict[tuple, _Template] = {}
        self.rounds = self.evaluations = self.batched = self.fallbacks = 0

    def closure(
        self, mll: ExactMarginalLogLikelihood
    ) -> Callable[..., tuple[Tensor, tuple[Tensor | None, ...]]]:
        """A BoTorch loss closure of ``mll`` (its negative value and the gradients,
        for ``fit_gpytorch_mll``'s ``closure``) whose evaluations are batched with
        the other runs'. Call it from a run's thread."""
        run = threading.current_thread()
        if not isinstance(run, _Run) or run.lockstep is not self:
            raise RuntimeError("Lockstep.closure() is for its runs' threads.")
        parameters = get_parameters(mll, requires_grad=True)
        own = get_loss_closure_with_grads(mll, parameters=parameters)
        names = list(parameters)

        def closure(**kwargs: Any) -> tuple[Tensor, tuple[Tensor | None, ...]]:
            if kwargs:
                return own(**kwargs)
            request = _Request(mll, names)
            run.ask(request)
            if request.result is None:  # not batched: evaluate alone
                return own()
            return request.result

        return closure

    def run(self) -> list[tuple[Any, BaseException | None]]:
        """Run every function to its end.

        Returns:
            ``(result, error)`` of each function, in order.
        """
        self.context.save()
        for run in self.runs:
            run.start()
        live = list(self.runs)
        try:
            while live:
                for run in live:
                    self.yielded.clear()
                    run.resume.set()
                    self.yielded.wait()
                self.context.restore()
                live = [run for run in live if not run.done]
                requests = [run.request for run in live if run.request is not None]
                for run in live:
                    run.request = None
                self._evaluate(requests)
        finally:
            self.context.restore()
        for run in self.runs:
            run.join()
        return [(run.result, run.error) for run in self.runs]

    def _evaluate(self, requests: list[_Request]) -> None:
        """Answer the requests of models that share a fingerprint with at least one
        other request, one batched evaluation each."""
        if not requests:
            return
        self.rounds += 1
        groups: dict[tuple, list[_Request]] = {}
        for request in requests:
            model = request.mll.model
            if type(request.mll) not in BATCHED_OBJECTIVES:
                continue
            inputs = model.train_inputs
            if len(inputs) != 1 or inputs[0].dim() != 2:
                continue
            if model.train_targets.dim() != 1:
                continue
            groups.setdefault(fingerprint(model), []).append(request)
        for model_print, members in groups.items():
            if len(members) < 2:
                continue
            template = self.templates.get(model_print)
            if template is None:
                template = _Template(members[0].mll.model)
                self.templates[model_print] = template
            self._evaluate_group(template, members)

    def _evaluate_group(self, template: _Template, requests: list[_Request]) -> None:
        """Evaluate the requests' models as one batched model (or leave them to
        evaluate themselves where that fails or warns)."""
        self.evaluations += 1
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                models = [r.mll.model for r in requests]
                batched = template.load(models)
                sizes = [m.train_targets.shape[-1] for m in models]
                sizes = batched.train_targets.new_tensor(sizes)
                mll = PaddedMarginalLogLikelihood(batched.likelihood, batched, sizes)
                mll.train()
                parameters = get_parameters(mll, requires_grad=True)
                output = batched(*batched.train_inputs)
                inputs = (batched.transform_inputs(X=x) for x in batched.train_inputs)
                values = mll(output, batched.train_targets, *inputs)
                values.sum().neg().backward()  # the loss: minus the values
            if caught or values.shape != (len(requests),):
                raise RuntimeError("the batched evaluation warned")
        except Exception:  # e.g. a failed factorization: each run evaluates alone
            self.fallbacks += len(requests)
            return
        self.batched += len(requests)
        for slot, request in enumerate(requests):
            grads = tuple(
                None if parameters[name].grad is None else parameters[name].grad[slot]
                for name in request.names
            )
            request.result = (-values[slot].detach(), grads)


def run_in_lockstep(
    functions: Sequence[Callable[[], T]], return_exceptions: bool = False
) -> list[T | BaseException]:
    """Run ``functions`` (independent BO runs) with their model fits batched.

    Each function runs in its own thread, one at a time; every fit by
    [`fit_model()`][treebo.gp.fit.fit_model] inside them (the loop's fits, e.g.
    in ``TreeOptimizer.ask()``) is evaluated together with the other runs' fits of
    models of the same structure (module docstring). The results equal those of
    calling the functions one by one, each from the caller's global random state,
    up to the last bits of batched arithmetic.

    Args:
        functions: Callables without arguments.
        return_exceptions: Return a function's exception in its place instead of
            raising the first one (after every function has ended).

    Returns:
        The functions' return values, in order.

    Example:
        >>> from treebo import TreeOptimizer
        >>> from treebo.test_functions import Jenatton
        >>> problem = Jenatton()
        >>> def run(seed):
        ...     opt = TreeOptimizer(problem.space, n_initial=5, seed=seed)
        ...     for _ in range(7):
        ...         x = opt.ask()
        ...         opt.tell(x, problem.objective(x))
        ...     return opt.best_trial.value
        >>> best = run_in_lockstep([lambda s=s: run(s) for s in range(3)])
        >>> len(best)
        3
    """
    outcomes = Lockstep(functions).run()
    if not return_exceptions:
        for _, error in outcomes:
            if error is not None:
                raise error
    return [result if error is None else error for result, error in outcomes]
