r"""Many BO runs at once: their model fits and acquisitions evaluated as batched models.

An experiment of many independent runs (seeds, tasks that share a search space,
variants of a method) spends most of its time fitting hyper-parameters, and at a few
dozen points one evaluation of the marginal likelihood and its gradient is mostly
Python and dispatch overhead, about the same whether the kernel matrix holds one
run's points or thirty runs'.
[`run_in_lockstep()`][treebo.loop.lockstep.run_in_lockstep] runs each function in its
own thread, one thread at a time, and switches only where a fit asks for the marginal
likelihood or an acquisition maximizer for its value and gradient (the seams:
[`objective_closure`][treebo.gp.fit.objective_closure] and
[`function_evaluation`][treebo.optim.lbfgsb.function_evaluation], set in each run's
thread). Once every run has asked (or ended), the marginal-likelihood
requests of models with the same [`fingerprint()`][treebo.gp.stacking.fingerprint]
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
used: each run in it evaluates its own model instead. A run further along than
another (a later proposal, or its acquisition while the other still fits) waits with
its request until the other catches up, so that the runs meet at each stage and their
evaluations batch fully. The acquisitions' evaluations are batched likewise
([`treebo.loop.batched_acquisition`][treebo.loop.batched_acquisition]). Everything else
(raw samples, local steps, the loop's bookkeeping) runs in each run's thread, one run at
a time.
"""

from __future__ import annotations

import copy
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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
from treebo.gp.stacking import ModelStack, fingerprint
from treebo.loop.batched_acquisition import (
    AcquisitionBatcher,
    AcquisitionRequest,
    batchable,
)
from treebo.loop.optimizer import current_proposal
from treebo.optim.lbfgsb import function_evaluation, value_and_gradient

T = TypeVar("T")

#: The objectives whose evaluations are batched (others evaluate one by one).
BATCHED_OBJECTIVES = (ExactMarginalLogLikelihood, CholeskyMarginalLogLikelihood)


@dataclass
class _Request:
    """One run's request for its marginal likelihood and gradient."""

    mll: ExactMarginalLogLikelihood
    names: list[str]
    result: tuple[Tensor, tuple[Tensor | None, ...]] | None = None
    #: How far the run is: its proposal, then fits before acquisitions.
    stage: tuple[int, int] = field(default_factory=lambda: (current_proposal.get(), 0))


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
        self.request: _Request | AcquisitionRequest | None = None
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = False

    def run(self) -> None:
        # The seams: fits and acquisition maximizers in this thread (its own
        # context) evaluate through the lockstep.
        objective_closure.set(self.lockstep.closure)
        function_evaluation.set(self.lockstep.evaluation)
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

    def ask(self, request: _Request | AcquisitionRequest) -> None:
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
        self.templates: dict[tuple, ModelStack] = {}
        self.rounds = self.evaluations = self.batched = self.fallbacks = 0
        self.acquisitions = AcquisitionBatcher()

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

    def evaluation(
        self, fun: Callable[[Tensor], Tensor], x: Tensor
    ) -> tuple[Tensor, Tensor]:
        """The sum of ``fun(x)`` and its gradient (what
        [`maximize_batched()`][treebo.optim.lbfgsb.maximize_batched] asks for),
        evaluated with the other runs' where ``fun`` is an acquisition that batches
        ([`treebo.loop.batched_acquisition`][treebo.loop.batched_acquisition])."""
        run = threading.current_thread()
        if not (isinstance(run, _Run) and run.lockstep is self and batchable(fun, x)):
            return value_and_gradient(fun, x)
        request = AcquisitionRequest(fun, x.detach(), (current_proposal.get(), 1))
        run.ask(request)
        if request.result is None:  # not batched: evaluate alone
            return value_and_gradient(fun, x)
        return request.result

    def run(self) -> list[tuple[Any, BaseException | None]]:
        """Run every function to its end.

        Returns:
            ``(result, error)`` of each function, in order.
        """
        self.context.save()
        for run in self.runs:
            run.start()
        live, waking = list(self.runs), list(self.runs)
        try:
            while live:
                for run in waking:
                    self.yielded.clear()
                    run.resume.set()
                    self.yielded.wait()
                self.context.restore()
                live = [run for run in live if not run.done]
                asking = [run for run in live if run.request is not None]
                if not asking:
                    waking = live
                    continue
                # The runs furthest behind go first; the others wait with their
                # requests, so that the runs meet at each stage and batch fully.
                first = min(run.request.stage for run in asking)
                waking = [run for run in asking if run.request.stage == first]
                requests = [run.request for run in waking]
                for run in waking:
                    run.request = None
                self._evaluate(requests)
        finally:
            self.context.restore()
        for run in self.runs:
            run.join()
        return [(run.result, run.error) for run in self.runs]

    def _evaluate(self, requests: list[_Request | AcquisitionRequest]) -> None:
        """Answer the requests of models that share a fingerprint with at least one
        other request, one batched evaluation each."""
        if not requests:
            return
        self.rounds += 1
        self.acquisitions.answer(
            [r for r in requests if isinstance(r, AcquisitionRequest)]
        )
        groups: dict[tuple, list[_Request]] = {}
        for request in requests:
            if isinstance(request, AcquisitionRequest):
                continue
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
                template = ModelStack(members[0].mll.model)
                self.templates[model_print] = template
            self._evaluate_group(template, members)

    def _evaluate_group(self, template: ModelStack, requests: list[_Request]) -> None:
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
