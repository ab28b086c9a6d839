r"""Models of one structure stacked along a batch dimension.

Independent runs fit and query models of the same structure: the same classes,
settings and parameter shapes, different hyper-parameters and data.
[`stack_models()`][treebo.gp.stacking.stack_models] makes one model with a leading
batch dimension of them (their parameters and training data stacked, shorter data
padded), whose marginal likelihood is each member's and whose posterior at
``b x R x 1 x d`` points is each member's at its own ``b`` points: one evaluation
instead of ``R``, which is what the lockstep runner
([`treebo.loop.lockstep`][treebo.loop.lockstep]) batches.
[`fingerprint()`][treebo.gp.stacking.fingerprint] says which models stack.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

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


class ModelStack:
    """A copy of a model whose parameters and data are replaced by stacks of other
    models' (of the same [`fingerprint()`][treebo.gp.stacking.fingerprint]), built
    once and loaded with each group of members.

    Args:
        model: A member (the copy's structure).
    """

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
            [`fingerprint()`][treebo.gp.stacking.fingerprint] and with equal numbers
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
    return ModelStack(models[0]).load(models)
