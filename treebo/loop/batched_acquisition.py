r"""Many runs' acquisition values and gradients as one batched evaluation.

Each run of a lockstep batch maximizes its acquisition with L-BFGS-B
([`maximize_batched()`][treebo.optim.lbfgsb.maximize_batched]), one evaluation of the
acquisition and its gradient per iteration. At the few dozen points of a BO run, an
evaluation is mostly Python and dispatch overhead, so the runs' evaluations of the same
kind of acquisition on models of one structure
([`fingerprint()`][treebo.gp.stacking.fingerprint]) and size are made as one: the
models stacked along a batch dimension
([`ModelStack`][treebo.gp.stacking.ModelStack]), the runs' points ``b_r x 1 x d``
padded to ``b`` and arranged ``b x R x 1 x d`` (the model's batch trails the points'),
the acquisition built on the stack with each run's incumbent $f^*_r$:

$$
\alpha(x_{r,i}) = \text{LogEI}_r(x_{r,i}) \text{ or } \sigma_r(x_{r,i}), \qquad
\frac{\partial}{\partial x_{r,i}} \sum_{s,j} \alpha(x_{s,j})
= \frac{\partial \alpha(x_{r,i})}{\partial x_{r,i}},
$$

so each run receives its own sum and gradient, and its L-BFGS-B takes the path it takes
alone, up to the last bits of the batched arithmetic. Other acquisitions (Monte Carlo,
with pending points, per-vertex UCB) evaluate alone.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction, LogExpectedImprovement
from botorch.acquisition.analytic import PosteriorStandardDeviation
from torch import Tensor

from treebo.gp.stacking import ModelStack, fingerprint

#: The acquisitions whose evaluations are batched.
BATCHED_ACQUISITIONS = (LogExpectedImprovement, PosteriorStandardDeviation)


@dataclass
class AcquisitionRequest:
    """One run's request for the sum of ``acqf`` at ``x`` and its gradient."""

    acqf: AcquisitionFunction
    x: Tensor
    #: How far the run is: its proposal, then ``1`` (after its fits).
    stage: tuple[int, int] = (-1, 1)
    result: tuple[Tensor, Tensor] | None = None


def batchable(fun: Callable[[Tensor], Tensor], x: Tensor) -> bool:
    """Whether ``fun`` at ``x`` can join a batched evaluation: an analytic LogEI or
    posterior standard deviation of an exact single-output GP in eval mode, without a
    posterior transform, at ``b x 1 x d`` points."""
    if type(fun) not in BATCHED_ACQUISITIONS or x.dim() != 3 or x.shape[-2] != 1:
        return False
    if getattr(fun, "posterior_transform", None) is not None:
        return False
    model = getattr(fun, "model", None)
    inputs = getattr(model, "train_inputs", None)
    return (
        model is not None
        and not model.training
        and inputs is not None
        and len(inputs) == 1
        and inputs[0].dim() == 2
        and model.train_targets.dim() == 1
    )


@dataclass
class AcquisitionBatcher:
    """Answers acquisition requests in groups, one batched evaluation per group.

    A group's stacked model is kept while its members stay the same (an L-BFGS-B
    run asks many times with one model), so its solve is made once.

    Attributes:
        evaluations: Batched evaluations made.
        batched: Requests answered by them.
        fallbacks: Requests left to evaluate alone because their batched evaluation
            failed or warned.
    """

    stacks: dict[tuple, tuple[ModelStack, list[Any], Any]] = field(default_factory=dict)
    evaluations: int = 0
    batched: int = 0
    fallbacks: int = 0

    def answer(self, requests: list[AcquisitionRequest]) -> None:
        """Answer the requests that share a group with at least one other."""
        groups: dict[tuple, list[AcquisitionRequest]] = {}
        for request in requests:
            model = request.acqf.model
            key = (
                type(request.acqf),
                bool(request.acqf.maximize),
                fingerprint(model),
                int(model.train_targets.shape[-1]),
            )
            groups.setdefault(key, []).append(request)
        for key, members in groups.items():
            if len(members) > 1:
                self._evaluate(key, members)

    def _stacked_model(self, key: tuple, models: list[Any]) -> Any:
        """The stack of ``models`` (reloaded only when the members change)."""
        entry = self.stacks.get(key)
        if entry is None:
            entry = (ModelStack(models[0]), [], None)
        stack, members, batched = entry
        if len(members) != len(models) or any(
            a is not b for a, b in zip(members, models, strict=False)
        ):
            with torch.no_grad():
                batched = stack.load(models).eval()  # eval() drops cached solves
            for parameter in batched.parameters():
                parameter.requires_grad_(False)
        self.stacks[key] = (stack, list(models), batched)
        return batched

    def _evaluate(self, key: tuple, requests: list[AcquisitionRequest]) -> None:
        self.evaluations += 1
        sizes = [r.x.shape[0] for r in requests]
        b = max(sizes)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                batched = self._stacked_model(key, [r.acqf.model for r in requests])
                X = torch.stack(
                    [
                        torch.cat([r.x, r.x[:1].expand(b - r.x.shape[0], -1, -1)])
                        for r in requests
                    ],
                    dim=1,
                ).detach()  # b x R x 1 x d
                X.requires_grad_(True)
                first = requests[0].acqf
                if isinstance(first, LogExpectedImprovement):
                    best_f = torch.stack(  # R x 1: against the R x m means
                        [r.acqf.best_f.reshape(1) for r in requests]
                    ).to(X)
                    acqf = LogExpectedImprovement(
                        batched, best_f=best_f, maximize=first.maximize
                    )
                else:
                    acqf = PosteriorStandardDeviation(batched, maximize=first.maximize)
                values = acqf(X)  # b x R
                valid = torch.arange(b, device=X.device).unsqueeze(-1) < X.new_tensor(
                    sizes
                ).unsqueeze(0)
                (grad,) = torch.autograd.grad(values[valid].sum(), X)
            if caught or values.shape != (b, len(requests)):
                raise RuntimeError("the batched evaluation warned")
        except Exception:  # each run evaluates alone
            self.fallbacks += len(requests)
            return
        self.batched += len(requests)
        for slot, (request, n) in enumerate(zip(requests, sizes, strict=True)):
            total = values[:n, slot].sum().detach()
            request.result = (total, grad[:n, slot])
