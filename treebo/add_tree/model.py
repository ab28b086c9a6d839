r"""Exact GP with the Add-Tree kernel, and its per-vertex posteriors.

Under the Add-Tree prior the latent function is a sum of independent vertex components,
$f(x) = m + \sum_{v \in l(x)} f_v(x|_v)$. Given training data $(X, y)$ with
$\hat K = K(X, X) + \Sigma$ and $\alpha = \hat K^{-1}(y - m)$, the posterior of
component $v$ at a point $z$ that passes through $v$ is Gaussian with

$$
\mu_v(z) = k_v(z, X)\,\alpha, \qquad
\sigma_v^2(z) = \sigma_v^2 - k_v(z, X)\,\hat K^{-1} k_v(X, z),
$$

and on any path the component means sum (with $m$) to the GP's posterior mean. These are
what Add-Tree-GP-UCB (Algorithm 2 of Ma & Blaschko, 2020) maximizes vertex by vertex.

Two training points covary only through a vertex both pass through whose term is not
zero (a vertex with parameters, or with a constant). Where no such vertex is shared by
all points (a root without parameters or constant, and no component shared across a
depth), the points fall into groups that do not covary
([`covarying_groups()`][treebo.add_tree.model.covarying_groups]), and the covariance
matrix is block diagonal after sorting them by group
([`BlockDiagonalCovariance`][treebo.gp.exact_mll.BlockDiagonalCovariance]).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import InputTransform, Normalize
from botorch.models.transforms.outcome import OutcomeTransform, Standardize
from botorch.posteriors import GPyTorchPosterior
from botorch.utils.datasets import SupervisedDataset
from botorch.utils.types import DEFAULT, _DefaultType
from gpytorch.distributions import MultivariateNormal
from gpytorch.likelihoods import (
    FixedNoiseGaussianLikelihood,
    GaussianLikelihood,
    Likelihood,
)
from linear_operator.operators import DiagLinearOperator
from torch import Tensor

from treebo.add_tree.features import interacting_vertices
from treebo.add_tree.interaction import AncestorInteractionKernel
from treebo.add_tree.kernel import AddTreeKernel, AddTreeKernelSum
from treebo.add_tree.options import AddTreeKernelOptions
from treebo.gp.cached_solve import CachedSolveMixin
from treebo.space.structure import (
    HierarchicalDependencies,
    TreeStructure,
    as_tree_structure,
)


def covarying_groups(active: Tensor) -> Tensor:
    """Connected groups of points that share a vertex, through any chain of vertices.

    Args:
        active: ``n x V`` booleans: whether each point passes through each vertex
            (restricted to the vertices whose terms are not zero).

    Returns:
        ``n`` labels ``0 .. B - 1``; points with no such vertex (they covary with
        nothing, noise aside) share one label.

    Example:
        >>> active = torch.tensor([[1, 0, 0], [0, 1, 0], [1, 0, 1], [0, 0, 0]]).bool()
        >>> covarying_groups(active).tolist()
        [0, 1, 0, 2]
    """
    V = active.shape[-1]
    a = active.to(torch.float64)
    linked = (a.transpose(-1, -2) @ a) > 0  # V x V: some point passes through both
    label = torch.arange(V, device=active.device)
    while True:  # spread the smallest label over linked vertices (<= V rounds)
        spread = torch.where(linked, label.unsqueeze(0), V).amin(-1)
        spread = torch.minimum(spread, label)
        if torch.equal(spread, label):
            break
        label = spread
    point = torch.where(active, label.unsqueeze(0), V).amin(-1)  # V: no vertex
    return torch.unique(point, return_inverse=True)[1]


class VertexPosterior(NamedTuple):
    r"""Posterior of every vertex component at a set of query points.

    Attributes:
        mean: ``batch_shape x r x V`` posterior means of the components, on the
            original outcome scale.
        variance: ``batch_shape x r x V`` posterior variances.
        offset: Scalar tensor (or ``batch_shape``): the constant that completes
            the sum, so that on a path ``offset + sum_v mean[..., v]`` is the
            model's posterior mean.
    """

    mean: Tensor
    variance: Tensor
    offset: Tensor


def transform_dependencies(
    train_X: Tensor,
    hierarchical_dependencies: HierarchicalDependencies,
    input_transform: InputTransform | None,
) -> dict[int, dict[float, list[int]]]:
    """Map the values in ``hierarchical_dependencies`` through an input transform.

    The kernel sees transformed inputs, so a transform that touches choice
    columns must be applied to the values that select branches as well.
    """
    deps = {int(p): dict(b) for p, b in hierarchical_dependencies.items()}
    if input_transform is None or not deps:
        return deps
    pairs = [(p, v) for p, b in deps.items() for v in b]
    # One probe row per (parent, value), with the training data's batch shape
    # (batched transforms check it).
    probe = train_X[..., :1, :].expand(*train_X.shape[:-2], len(pairs), -1).clone()
    rows = torch.arange(len(pairs))
    cols = torch.tensor([p for p, _ in pairs])
    probe[..., rows, cols] = torch.tensor([float(v) for _, v in pairs]).to(probe)
    with torch.no_grad():
        moved = input_transform.preprocess_transform(probe)[..., rows, cols]
    moved = moved.reshape(-1, len(pairs))
    if not torch.equal(moved, moved[:1].expand_as(moved)):
        raise ValueError(
            "input_transform maps the branch values in hierarchical_dependencies "
            "differently across batch members; the tree must be the same for all."
        )
    moved = moved[0].tolist()
    out: dict[int, dict[float, list[int]]] = {}
    for (p, v), new in zip(pairs, moved, strict=False):
        out.setdefault(p, {})[new] = list(deps[p][v])
    return out


class _MomentPosterior(GPyTorchPosterior):
    """A Gaussian posterior at single points, from given means and variances
    (``batch_shape x 1``); ``mean`` and ``variance`` return them as they are."""

    def __init__(self, mean: Tensor, variance: Tensor) -> None:
        super().__init__(MultivariateNormal(mean, DiagLinearOperator(variance)))
        self._moments = (mean.unsqueeze(-1), variance.unsqueeze(-1))

    @property
    def mean(self) -> Tensor:
        return self._moments[0]

    @property
    def variance(self) -> Tensor:
        return self._moments[1]


class BranchWithoutDataWarning(UserWarning):
    """A value of ``hierarchical_dependencies`` that no training row takes."""


def warn_on_branches_without_data(train_X: Tensor, tree: TreeStructure) -> None:
    """Warn about each branch of ``tree`` that no row of ``train_X`` is on.

    Such a branch's columns are inactive everywhere, so a choice value that the data
    encode differently from ``hierarchical_dependencies`` (labels shifted, an index for
    a value) silently drops its parameters from the model. Early in a BO run a branch
    may just not be visited yet: silence this with ``warnings.filterwarnings("ignore",
    category=BranchWithoutDataWarning)``, or pass ``space.tree`` (a treebo space
    encodes its own values), which is not checked.
    """
    if train_X.shape[-2] == 0:
        return
    active = tree.vertex_activity(train_X.detach()).reshape(-1, tree.num_vertices)
    for v in (~active.any(0)).nonzero().flatten().tolist():
        vertex = tree.vertices[v]
        parent = vertex.parent
        if parent is None or not bool(active[:, parent].any()):
            continue  # the root, or below a branch already reported
        owned = sorted(vertex.continuous_columns + vertex.choice_columns)
        if not owned:
            continue  # a value that activates nothing loses nothing
        column, values = vertex.condition
        warnings.warn(
            f"hierarchical_dependencies: no training row on which column {column} "
            f"is active takes the value {values[0] if len(values) == 1 else values}; "
            f"the columns it activates, {owned}, are "
            "inactive everywhere (expected while a BO run has not visited the "
            "branch; otherwise: are the choice values encoded as in "
            "hierarchical_dependencies?).",
            BranchWithoutDataWarning,
            stacklevel=3,
        )


class AddTreeGP(CachedSolveMixin, SingleTaskGP):
    r"""Single-task exact GP with an
    [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel].

    A drop-in replacement for
    `botorch.models.hierarchical.HierarchicalConditionalKernelGP`: same column layout
    (choice columns hold the values named in ``hierarchical_dependencies``), same
    ``train_Yvar``, ``input_transform`` and ``outcome_transform`` arguments.

    By default inputs are normalized with `Normalize` on the numeric parameter columns
    only (using ``bounds`` if given, else the training data's range), so that choice and
    categorical columns keep their values.

    Args:
        train_X: ``batch_shape x n x d`` training inputs.
        train_Y: ``batch_shape x n x m`` training observations.
        hierarchical_dependencies: ``{parent_col: {value: [child_cols]}}``, or its
            [`TreeStructure`][treebo.space.structure.TreeStructure] (e.g.
            ``space.tree``), which the model and its kernel then share.
        train_Yvar: Optional observed noise variances, like ``train_Y``.
        likelihood: Optional likelihood (default as in ``SingleTaskGP``).
        bounds: Optional ``2 x d`` bounds of the inputs used by the default
            normalization.
        input_transform: Input transform; ``DEFAULT`` normalizes continuous
            columns, ``None`` applies nothing.
        outcome_transform: Outcome transform (``DEFAULT``: ``Standardize``).
        covar_module: Optional ready
            [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel] (e.g. with other
            priors) or sum of them (e.g. ``AddTreeKernel(...) +
            AncestorInteractionKernel(...)``); must match ``train_X``'s columns.
        categorical_values: ``{column: values}`` of the unordered categorical
            parameter columns (e.g. ``TreeSpace.categorical_values``), modelled
            by one-hot features inside their vertex's kernel; default none.
        **kernel_options: The kernel's structural settings, the fields of
            [`AddTreeKernelOptions`][treebo.add_tree.options.AddTreeKernelOptions]
            (``base_kernel``, ``vertex_bias``, ``share_lengthscales``,
            ``share_outputscales``, ``shared_component``, and
            ``ancestor_interactions``: add an
            [`AncestorInteractionKernel`][treebo.add_tree.interaction.AncestorInteractionKernel]
            of the same base kernel and sharing where a vertex with parameters lies
            below another); default Definition 4 of the paper.

    Example:
        >>> from treebo.gp import fit_model
        >>> from treebo.test_functions import Jenatton
        >>> problem = Jenatton()
        >>> X = problem.space.sample(20, seed=0)
        >>> Y = problem(X).unsqueeze(-1)
        >>> model = AddTreeGP(X, Y, problem.space.to_hierarchical_dependencies(),
        ...                   share_lengthscales="depth", vertex_bias="all")
        >>> _ = fit_model(model)
        >>> model.posterior(problem.space.sample(5, seed=1)).mean.shape
        torch.Size([5, 1])
    """

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        hierarchical_dependencies: HierarchicalDependencies | TreeStructure,
        train_Yvar: Tensor | None = None,
        likelihood: Likelihood | None = None,
        bounds: Tensor | None = None,
        input_transform: InputTransform | _DefaultType | None = DEFAULT,
        outcome_transform: OutcomeTransform | _DefaultType | None = DEFAULT,
        covar_module: AddTreeKernel | None = None,
        categorical_values: Mapping[int, Sequence[float]] | None = None,
        **kernel_options: Any,
    ) -> None:
        if train_X.dim() < 2:
            raise ValueError(
                "train_X must be batch_shape x n x d, got shape "
                f"{tuple(train_X.shape)}."
            )
        kernel_options = AddTreeKernelOptions(**kernel_options).as_kwargs()
        interactions = kernel_options.pop("ancestor_interactions")
        d = train_X.shape[-1]
        tree = as_tree_structure(d, hierarchical_dependencies)
        if not isinstance(hierarchical_dependencies, TreeStructure):
            warn_on_branches_without_data(train_X, tree)
        categorical_values = dict(categorical_values or {})
        numeric = [c for c in tree.continuous_columns if c not in categorical_values]
        if input_transform == DEFAULT:
            input_transform = (
                Normalize(
                    d=d,
                    indices=numeric,
                    bounds=None if bounds is None else bounds.to(train_X),
                    batch_shape=train_X.shape[:-2],
                )
                if numeric
                else None
            )
        deps = transform_dependencies(
            train_X, tree.hierarchical_dependencies, input_transform
        )
        if outcome_transform == DEFAULT:
            outcome_transform = Standardize(
                m=train_Y.shape[-1], batch_shape=train_X.shape[:-2]
            )
        batch_shape = train_X.shape[:-2]
        if train_Y.shape[-1] > 1:
            batch_shape = batch_shape + torch.Size([train_Y.shape[-1]])
        if covar_module is None:
            # The kernel reads transformed inputs: it shares the structure
            # unless the transform moved the values that select branches.
            kernel_tree = tree if deps == tree.hierarchical_dependencies else deps
            covar_module = AddTreeKernel(
                dim=d,
                hierarchical_dependencies=kernel_tree,
                batch_shape=batch_shape,
                categorical_values=categorical_values,
                **kernel_options,
            )
            if interactions and bool(interacting_vertices(tree).any()):
                covar_module = covar_module + AncestorInteractionKernel(
                    d,
                    covar_module.tree,
                    base_kernel=kernel_options["base_kernel"],
                    share_lengthscales=kernel_options["share_lengthscales"],
                    share_outputscales=kernel_options["share_outputscales"],
                    batch_shape=batch_shape,
                    categorical_values=categorical_values,
                )
        elif (
            not isinstance(covar_module, (AddTreeKernel, AddTreeKernelSum))
            or covar_module.dim != d
        ):
            raise ValueError(
                "covar_module must be an AddTreeKernel (or a sum of them) over the "
                "columns of train_X."
            )
        self._original_dependencies = tree.hierarchical_dependencies
        super().__init__(
            train_X=train_X,
            train_Y=train_Y,
            train_Yvar=train_Yvar,
            likelihood=likelihood,
            covar_module=covar_module,
            input_transform=input_transform,
            outcome_transform=outcome_transform,
        )

    @classmethod
    def construct_inputs(
        cls,
        training_data: SupervisedDataset,
        hierarchical_dependencies: HierarchicalDependencies,
        categorical_values: Mapping[int, Sequence[float]] | None = None,
        categorical_features: Sequence[int] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Model keyword arguments from a dataset (used by Ax's ``BoTorchGenerator``).

        Args:
            training_data: A ``SupervisedDataset``.
            hierarchical_dependencies: ``{parent_col: {value: [child_cols]}}``.
            categorical_values: ``{column: values}`` of unordered categorical
                parameter columns.
            categorical_features: Ax's unordered choice columns, encoded as
                integer codes ``0 .. k-1`` (Ax's ``ChoiceToNumericChoice``).
                Those that are not choices of the tree become categorical
                columns with the codes ``0`` up to the largest code observed
                (Ax does not pass ``k``; a larger code proposed later is a
                further category). Ignored where ``categorical_values`` is
                given.
            **kwargs: Kernel options (fields of
                [`AddTreeKernelOptions`][treebo.add_tree.options.AddTreeKernelOptions])
                and ``SingleTaskGP.construct_inputs``' own arguments.
        """
        names = AddTreeKernelOptions.names()
        kernel_options = {k: kwargs.pop(k) for k in names if k in kwargs}
        inputs = super().construct_inputs(training_data=training_data, **kwargs)
        # A structure, not a dict: Ax's data leave branches empty early in a run,
        # which is no mistake of encoding (see warn_on_branches_without_data).
        inputs["hierarchical_dependencies"] = as_tree_structure(
            training_data.X.shape[-1], hierarchical_dependencies
        )
        if categorical_values is None and categorical_features:
            X = training_data.X
            categorical_values = {
                int(col): list(range(int(X[..., col].max().round()) + 1))
                for col in categorical_features
                if int(col) not in hierarchical_dependencies
            }
        if categorical_values:
            inputs["categorical_values"] = categorical_values
        inputs.update(AddTreeKernelOptions(**kernel_options).as_kwargs())
        return inputs

    @property
    def tree(self) -> TreeStructure:
        """The tree over the (transformed) input columns."""
        return self.covar_module.tree

    @property
    def hierarchical_dependencies(self) -> dict[int, dict[float, list[int]]]:
        """The dependencies in the user's (untransformed) input space."""
        return self._original_dependencies

    def covariance_blocks(self) -> Tensor | None:
        """Labels of training points that do not covary
        ([`covarying_groups()`][treebo.add_tree.model.covarying_groups]), for a
        block-by-block marginal likelihood
        ([`BlockDiagonalCovariance`][treebo.gp.exact_mll.BlockDiagonalCovariance]).

        ``None`` where the covariance is one block, the training data are batched, the
        likelihood is not Gaussian with constant or known noise, or blocks would not
        pay: ``B`` blocks padded to the largest, ``m``, cost ``B m^3``, more than half
        of ``n^3``.
        """
        X = self.train_inputs[0]
        kernel = self.covar_module
        likelihoods = (GaussianLikelihood, FixedNoiseGaussianLikelihood)
        if X.dim() != 2 or kernel.shared_component:
            return None
        if not isinstance(self.likelihood, likelihoods):
            return None
        if self.training:
            X = self.transform_inputs(X)
        terms = kernel.vertex_has_params | kernel.vertex_has_offset
        labels = covarying_groups(self.tree.vertex_activity(X) & terms)
        counts = torch.bincount(labels)
        n, m = X.shape[0], int(counts.max())
        if counts.numel() * m**3 > n**3 / 2:
            return None
        return labels

    def posterior_mean_variance(self, X: Tensor) -> tuple[Tensor, Tensor]:
        r"""Latent posterior mean and variance, from one cached Cholesky factor.

        Equals ``posterior(X).mean`` and ``.variance`` (one outcome) without
        GPyTorch's lazy-tensor machinery: a kernel call against the training
        inputs and a triangular solve, which makes acquisition optimization
        several times cheaper.

        Args:
            X: ``batch_shape x q x d`` raw inputs.

        Returns:
            ``(mean, variance)``, each ``batch_shape x q``, original outcome scale.
        """
        if self.num_outputs != 1:
            raise NotImplementedError("posterior_mean_variance supports one outcome.")
        if self.training:
            raise RuntimeError("call model.eval() before posterior_mean_variance.")
        cache = self.solve_cache()
        Z = self.transform_inputs(X) if hasattr(self, "input_transform") else X
        shape = Z.shape[:-1]
        members = cache["X"].shape[:-2]
        if not members:
            # One model: the moments of a point do not depend on the others,
            # so every query is one row of a single N x n cross-covariance
            # (a batch of N single-point grams costs several times more).
            Z = Z.reshape(1, -1, Z.shape[-1])
        elif len(members) == 1 and Z.dim() >= 3 and Z.shape[-3] == members[0]:
            # A batch of K models (stacked runs, an ensemble) queried at
            # ... x K x q x d: each member's queries as one N x n
            # cross-covariance, so its factor is not copied per query.
            Z = Z.movedim(-3, 0).reshape(members[0], -1, Z.shape[-1])
        else:
            members = None
        kernel = self.covar_module
        if "features" not in cache:  # the training points' side, once per cache
            with torch.no_grad():
                cache["features"] = kernel.slot_features(cache["X"])
        features = kernel.slot_features(Z)  # the queries' side, once
        kzx = kernel.forward(
            Z, cache["X"], x1_features=features, x2_features=cache["features"]
        )
        mean = (kzx @ cache["alpha"].unsqueeze(-1)).squeeze(-1)
        mean = mean + cache["constant"][..., None]
        w = torch.linalg.solve_triangular(
            cache["L"], kzx.transpose(-1, -2), upper=False
        )
        prior = kernel.forward(Z, Z, diag=True, x1_features=features)
        var = (prior - w.pow(2).sum(-2)).clamp_min(0.0)
        if members == ():
            mean, var = mean.reshape(shape), var.reshape(shape)
        elif members is not None:
            lead = (*shape[:-2], shape[-1])  # ... x q, the member moved to front
            mean = mean.reshape(members[0], *lead).movedim(0, -2)
            var = var.reshape(members[0], *lead).movedim(0, -2)
        return self.untransform_moments(mean, var)

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        r"""The posterior at ``X`` (``batch_shape x q x d``).

        In eval mode, for one point per batch (``q = 1``, the case of analytic
        acquisition functions such as ``LogExpectedImprovement``) without observation
        noise or a posterior transform, the moments come from
        [`posterior_mean_variance()`][treebo.add_tree.model.AddTreeGP.posterior_mean_variance]
        (one cached Cholesky factor; the hyper-parameters are constants, gradients flow
        to ``X``). Otherwise, and always in train mode, this is
        ``SingleTaskGP.posterior``.
        """
        outcome_transform = getattr(self, "outcome_transform", None)
        fast = (
            not self.training
            and X.dim() >= 2
            and X.shape[-2] == 1
            and self.num_outputs == 1
            and output_indices is None
            and observation_noise is False
            and posterior_transform is None
            and not kwargs
            and (
                outcome_transform is None or isinstance(outcome_transform, Standardize)
            )
        )
        if not fast:
            return super().posterior(
                X,
                output_indices=output_indices,
                observation_noise=observation_noise,
                posterior_transform=posterior_transform,
                **kwargs,
            )
        mean, variance = self.posterior_mean_variance(X)
        return _MomentPosterior(mean, variance)

    def vertex_offset(self) -> Tensor:
        """The constant that completes the sum of vertex means (original scale)."""
        return self.constant_offset()

    def vertex_posterior(self, X: Tensor) -> VertexPosterior:
        r"""Posterior mean and variance of every vertex component, all at once.

        Each vertex ``v`` is evaluated on the columns of ``X`` it owns (and,
        where its kernel's terms read them, its ancestors'), as if ``v`` were on
        ``X``'s path (choice columns of ``X`` are ignored), so one row of
        ``X`` gives candidate values for every vertex.

        Args:
            X: ``batch_shape x r x d`` query points in the raw input space.

        Returns:
            A [`VertexPosterior`][treebo.add_tree.model.VertexPosterior] with
            ``batch_shape x r x V`` means and variances on the original outcome scale.
        """
        if self.num_outputs != 1:
            raise NotImplementedError("vertex_posterior supports one outcome.")
        cache = self.solve_cache()
        Z = self.transform_inputs(X) if hasattr(self, "input_transform") else X
        kzx = self.covar_module.vertex_covariance(Z, cache["X"])  # *b x r x V x n
        prior = self.covar_module.vertex_prior_variance().unsqueeze(-2)
        mean, var = self.component_moments(kzx, prior, component_dims=2)
        offset = self.vertex_offset()
        return VertexPosterior(mean=mean, variance=var, offset=offset)
