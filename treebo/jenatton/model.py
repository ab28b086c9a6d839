r"""The two per-leaf models: [`JenattonTreeGP`][treebo.jenatton.model.JenattonTreeGP]
(Jenatton et al.'s ``tree`` and ``tree-nonlinear``) and
[`IndependentLeafGP`][treebo.jenatton.model.IndependentLeafGP], both
[`LeafGP`][treebo.jenatton.leaf_gp.LeafGP]s (their math is there).
"""

from __future__ import annotations

from torch import Tensor

from treebo.jenatton.leaf_gp import LeafGP
from treebo.jenatton.leaves import LeafLayout, SharedFeatures
from treebo.space import TreeSpace
from treebo.space.structure import HierarchicalDependencies, as_tree_structure


class JenattonTreeGP(LeafGP):
    r"""The semi-parametric ``tree`` model of Jenatton et al. (ICML 2017): a
    GP per leaf on the leaf's own parameters plus a linear term, shared along
    the tree, in the parameters of the inner vertices (module docstring);
    with ``nonlinear=True``, ``tree-nonlinear`` (random Fourier features of
    the shared parameters, Jenatton et al. (2017), Sec. 3).

    A BoTorch `Model` on the column layout of
    [`AddTreeGP`][treebo.add_tree.model.AddTreeGP]; fit it with
    [`fit_leaf_gp()`][treebo.jenatton.fit.fit_leaf_gp].

    Args:
        train_X: ``n x d`` training inputs.
        train_Y: ``n x 1`` training observations.
        space_or_dependencies: A [`TreeSpace`][treebo.space.TreeSpace], or
            BoTorch's ``hierarchical_dependencies`` (see
            [`LeafGP`][treebo.jenatton.leaf_gp.LeafGP]).
        nonlinear: ``tree-nonlinear`` instead of ``tree``.
        num_features: $R$ of ``tree-nonlinear`` (paper: 25 per $\gamma$).
        feature_seed: Seed of the random features.
        bounds: ``2 x d`` input bounds (only without a space).
        noise_floor: Lower bound of the noise variance (standardized).

    Example:
        >>> from treebo.jenatton import fit_leaf_gp
        >>> from treebo.test_functions import Jenatton
        >>> problem = Jenatton()
        >>> X = problem.space.sample(20, seed=0)
        >>> model = JenattonTreeGP(X, problem(X).unsqueeze(-1), problem.space)
        >>> _ = fit_leaf_gp(model)
        >>> model.posterior(X[:3]).mean.shape
        torch.Size([3, 1])
    """

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        space_or_dependencies: TreeSpace | HierarchicalDependencies,
        nonlinear: bool = False,
        num_features: int = 25,
        feature_seed: int = 0,
        bounds: Tensor | None = None,
        noise_floor: float = 1e-6,
    ) -> None:
        if not isinstance(nonlinear, bool):
            raise TypeError(f"nonlinear must be a bool, got {nonlinear!r}.")
        d = train_X.shape[-1] if isinstance(train_X, Tensor) else 0
        tree = (
            space_or_dependencies.tree
            if isinstance(space_or_dependencies, TreeSpace)
            else as_tree_structure(d, space_or_dependencies)
        )
        features = SharedFeatures(
            LeafLayout(tree), nonlinear, num_features, seed=feature_seed
        )
        super().__init__(
            train_X,
            train_Y,
            tree
            if not isinstance(space_or_dependencies, TreeSpace)
            else space_or_dependencies,
            leaf_columns="own",
            features=features,
            bounds=bounds,
            noise_floor=noise_floor,
        )


class IndependentLeafGP(LeafGP):
    r"""Independent GPs, one per leaf, each on every real parameter of its
    path (nothing shared between leaves): the ``independent`` baseline of
    Jenatton et al. and of the Add-Tree paper, batched over leaves.

    Args:
        train_X: ``n x d`` training inputs.
        train_Y: ``n x 1`` training observations.
        space_or_dependencies: As for
            [`JenattonTreeGP`][treebo.jenatton.model.JenattonTreeGP].
        bounds: ``2 x d`` input bounds (only without a space).
        noise_floor: Lower bound of the noise variance (standardized).

    Example:
        >>> from treebo.test_functions import Jenatton
        >>> problem = Jenatton()
        >>> X = problem.space.sample(12, seed=0)
        >>> model = IndependentLeafGP(X, problem(X).unsqueeze(-1), problem.space)
        >>> model.posterior(X).variance.shape
        torch.Size([12, 1])
    """

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        space_or_dependencies: TreeSpace | HierarchicalDependencies,
        bounds: Tensor | None = None,
        noise_floor: float = 1e-6,
    ) -> None:
        super().__init__(
            train_X,
            train_Y,
            space_or_dependencies,
            leaf_columns="active",
            features=None,
            bounds=bounds,
            noise_floor=noise_floor,
        )
