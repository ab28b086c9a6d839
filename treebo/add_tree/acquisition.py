r"""Add-Tree-GP-UCB: a UCB per vertex and Algorithm 2 of Ma & Blaschko (2020).

With the per-vertex posteriors $(\mu_v, \sigma_v)$ of an
[`AddTreeGP`][treebo.add_tree.model.AddTreeGP], the vertex acquisition
([`AddTreeUCB`][treebo.add_tree.acquisition.AddTreeUCB]) is

$$
u_v(x|_v) = \pm\mu_v(x|_v) + \sqrt{\beta_v}\,\sigma_v(x|_v),
$$

(``+`` when maximizing, ``-`` when minimizing) and the value of a point on path $l$ is
$\sum_{v \in l} u_v$. Because the sum is additive over vertices, each $u_v$ can be
maximized on its own, low-dimensional domain and the best path read off afterwards:
[`optimize_add_tree_ucb()`][treebo.add_tree.acquisition.optimize_add_tree_ucb] maximizes
every vertex's UCB, all vertices and all restarts in one batched L-BFGS-B run, then
combines the per-vertex optima along each path (``P x V`` mask times ``V`` vector, or
the best configuration by message passing when the paths are too many to list) and
returns the best path's point.
"""

from __future__ import annotations

import math

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.utils.transforms import t_batch_mode_transform
from torch import Tensor

from treebo.add_tree.model import AddTreeGP
from treebo.add_tree.options import PATH_SELECTIONS
from treebo.optim.lbfgsb import maximize_batched
from treebo.optim.tree_optimize import (
    TreeCandidate,
    check_optimizer_inputs,
    perturb_around,
    reference_tensor,
)
from treebo.space import TreeSpace
from treebo.space.configurations import MAX_LISTED_PATHS


def add_tree_beta(t: int, vertex_dims: Tensor, scale: float = 0.2) -> Tensor:
    r"""The paper's schedule $\beta_t = 0.2\,\tilde d \log(2t)$, per vertex.

    $\tilde d$ is the dimension of the space in which UCB is maximized, i.e. the number
    of continuous parameters of each vertex (at least 1).

    Args:
        t: Iteration (number of observations so far, at least 1).
        vertex_dims: ``V`` long tensor of per-vertex dimensions.
        scale: The constant (0.2 in the paper, after Kandasamy et al., 2015).

    Returns:
        ``V`` float64 tensor.
    """
    if t < 1:
        raise ValueError(f"t must be >= 1, got {t}.")
    return scale * vertex_dims.clamp_min(1).to(torch.float64) * math.log(2 * t)


class AddTreeUCB(AcquisitionFunction):
    r"""Per-vertex (decomposed) upper confidence bound for an
    [`AddTreeGP`][treebo.add_tree.model.AddTreeGP].

    ``forward`` scores a point by the sum of the vertex UCBs on its own path,
    ``offset + sum_{v active at x} u_v(x)``, which makes this a standard BoTorch
    acquisition function (``b x 1 x d -> b``).
    [`vertex_values()`][treebo.add_tree.acquisition.AddTreeUCB.vertex_values] gives all
    vertex UCBs at once, which is what Algorithm 2 maximizes.

    Args:
        model: A fitted single-outcome [`AddTreeGP`][treebo.add_tree.model.AddTreeGP].
        beta: Scalar or ``V`` tensor of exploration weights. Default: the paper's
            [`add_tree_beta()`][treebo.add_tree.acquisition.add_tree_beta] with ``t``
            = number of training points.
        maximize: If false, the objective is minimized (lower confidence bound).
    """

    def __init__(
        self,
        model: AddTreeGP,
        beta: float | Tensor | None = None,
        maximize: bool = True,
    ) -> None:
        if not isinstance(model, AddTreeGP):
            raise TypeError(
                f"AddTreeUCB needs an AddTreeGP, got {type(model).__name__}."
            )
        if model.covar_module.reads_ancestors:
            raise ValueError(
                "AddTreeUCB maximizes each vertex on its own parameters, which "
                "needs a kernel whose terms do not read their ancestors' parameters "
                "(no ancestor_interactions)."
            )
        super().__init__(model=model)
        tree = model.tree
        if beta is None:
            beta = add_tree_beta(
                max(1, model.train_targets.shape[-1]), tree.vertex_dims
            )
        beta = torch.as_tensor(beta, dtype=torch.float64)
        if beta.numel() not in (1, tree.num_vertices) or (beta < 0).any():
            raise ValueError(
                f"beta must be a non-negative scalar or have {tree.num_vertices} "
                f"entries (one per vertex), got shape {tuple(beta.shape)}."
            )
        self.register_buffer("beta", beta)
        self.maximize = maximize

    def vertex_values(self, X: Tensor) -> Tensor:
        r"""UCB of every vertex, each read from the columns of ``X`` it owns.

        Args:
            X: ``batch_shape x d`` points in the model's raw input space.

        Returns:
            ``batch_shape x V`` tensor.
        """
        post = self.model.vertex_posterior(X)
        sign = 1.0 if self.maximize else -1.0
        beta = self.beta.to(post.mean)
        return sign * post.mean + beta.sqrt() * post.variance.clamp_min(1e-30).sqrt()

    def offset(self) -> Tensor:
        """The constant shared by every path (the GP's mean constant)."""
        offset = self.model.vertex_offset()
        return offset if self.maximize else -offset

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: Tensor) -> Tensor:
        r"""Sum of the vertex UCBs along each point's path.

        Args:
            X: ``batch_shape x 1 x d`` points.

        Returns:
            ``batch_shape`` tensor.
        """
        x = X.squeeze(-2)
        values = self.vertex_values(x)
        active = self.model.tree.vertex_activity(
            self.model.transform_inputs(x)
            if hasattr(self.model, "input_transform")
            else x
        )
        offset = self.offset()
        return offset + (values * active.to(values)).sum(-1)


def optimize_add_tree_ucb(
    acq_function: AddTreeUCB,
    space: TreeSpace,
    num_restarts: int = 10,
    raw_samples: int = 512,
    seed: int | None = None,
    maxiter: int = 200,
    around: Tensor | None = None,
    path_selection: str = "sum",
) -> TreeCandidate:
    r"""Add-Tree-GP-UCB: per-vertex maximization, then the best path.

    1. Draw ``raw_samples`` points; each row gives a candidate for every vertex
       (vertex ``v`` reads only its own columns), so one evaluation scores all
       vertices: ``raw_samples x V``.
    2. For every vertex, start ``num_restarts`` runs from its best raw rows;
       since columns belong to exactly one vertex, the starts of all vertices
       fit in one ``num_restarts x d`` tensor, optimized in one L-BFGS-B run of
       the separable sum.
    3. Take each vertex's best value $u_v^*$, score every path by
       $\sum_{v \in l} u_v^*$, and assemble the best path's point. With more than
       `MAX_LISTED_PATHS` paths, the best one is found by dynamic programming over the
       tree ([`ConfigurationSearch`][treebo.space.configurations.ConfigurationSearch])
       and the paths scored are it and those that change one of its choices.

    Args:
        acq_function: An [`AddTreeUCB`][treebo.add_tree.acquisition.AddTreeUCB].
        space: The search space whose encoding the model was trained on.
        num_restarts: Starts per vertex.
        raw_samples: Random points scored to pick the starts.
        seed: Seed for the raw samples.
        maxiter: L-BFGS-B iteration limit.
        around: Optional ``k x d`` points (e.g. the best observations) whose
            perturbations join the raw samples.
        path_selection: ``"sum"`` (Algorithm 2: the path with the largest sum
            of per-vertex optima) or ``"joint"`` (assemble each path's point
            from the per-vertex optima, then pick the path whose point has the
            largest UCB of the whole function).

    Returns:
        A [`TreeCandidate`][treebo.optim.tree_optimize.TreeCandidate].
    """
    if not isinstance(acq_function, AddTreeUCB):
        raise TypeError("optimize_add_tree_ucb needs an AddTreeUCB acquisition.")
    if path_selection not in PATH_SELECTIONS:
        raise ValueError(
            f"path_selection must be one of {PATH_SELECTIONS}, got {path_selection!r}."
        )
    check_optimizer_inputs(space, num_restarts, raw_samples)
    ref = reference_tensor(acq_function)
    tree = space.tree
    bounds = space.bounds.to(ref)
    col_vertex = space._column_vertex.to(ref.device)
    gen = torch.Generator()
    if seed is not None:
        gen.manual_seed(seed)
    # Every continuous column random: each row scores every vertex.
    raw = space.sample(raw_samples, generator=gen, canonical=False).to(ref)
    if around is not None:
        raw = torch.cat([raw, perturb_around(space, around.to(ref), generator=gen)])
    with torch.no_grad():
        raw_values = acq_function.vertex_values(raw)  # raw x V
    top = raw_values.topk(num_restarts, dim=0).indices  # R x V
    x0 = torch.gather(raw, 0, top[:, col_vertex])  # R x d, per-vertex starts
    free = torch.zeros(space.dim, dtype=torch.bool, device=ref.device)
    free[space.continuous_columns] = True
    x_opt, values = maximize_batched(
        acq_function.vertex_values,
        x0,
        bounds[0],
        bounds[1],
        free=free,
        maxiter=maxiter,
    )
    with torch.no_grad():
        start_values = acq_function.vertex_values(x0)
    cands = torch.cat([x_opt, x0])
    vals = torch.cat([values, start_values])  # 2R x V
    best_values, best_rows = vals.max(dim=0)  # V
    x_best = torch.gather(cands, 0, best_rows[col_vertex].unsqueeze(0))  # 1 x d
    contributes = acq_function.model.covar_module.vertex_contributes.to(best_values)
    scores = best_values * contributes
    offset = acq_function.offset().reshape(())
    if tree.num_paths <= MAX_LISTED_PATHS:
        # Each path's point: the per-vertex optima with that path's choices.
        path_values = tree.path_vertex_mask.to(scores) @ scores
        P = tree.num_paths
        index = torch.arange(P, device=ref.device)
        points = space.set_paths(x_best.expand(P, -1), index)
    else:
        # Too many paths to list: the best one by dynamic programming, and
        # the runners-up that change one active choice.
        path_values, points = _best_configurations(space, scores, x_best)
    if path_selection == "sum":
        path = int(path_values.argmax())
    else:
        # Score every path's assembled point by the UCB of the whole function,
        # whose variance (unlike the per-vertex ones) vanishes at observed
        # points and accounts for confounded components.
        with torch.no_grad():
            mean, var = acq_function.model.posterior_mean_variance(points.unsqueeze(-2))
        sign = 1.0 if acq_function.maximize else -1.0
        beta = acq_function.beta.to(mean).max()
        joint = sign * mean.squeeze(-1) + beta.sqrt() * var.squeeze(-1).sqrt()
        path = int(joint.argmax())
    return TreeCandidate(
        candidate=points[path : path + 1].detach(),
        value=(path_values[path] + offset).detach(),
        path=path if tree.num_paths <= MAX_LISTED_PATHS else None,
        path_values=(path_values + offset).detach(),
        path_candidates=points.detach(),
        vertex_point=x_best.detach(),
    )


def _best_configurations(
    space: TreeSpace, scores: Tensor, x_best: Tensor
) -> tuple[Tensor, Tensor]:
    """The best configuration of the vertex ``scores`` and, after it, each one
    that changes one of its active choices: their totals (``K``) and their
    points (``K x d``, the per-vertex optima ``x_best`` with their choices)."""
    tree = space.tree
    search = tree.configuration_search
    best = search(scores)
    x = x_best.clone()
    x[0, best.columns] = best.choice_values.to(x)
    x = space.canonicalize(x)
    owner = search.choice_vertex.to(x.device)[search.group_choice.to(x.device)]
    changes = tree.vertex_activity(x)[0][owner] & (best.group_gain < 0)
    others = x.expand(int(changes.sum()), -1).clone()
    rows = torch.arange(others.shape[0], device=x.device)
    others[rows, best.group_columns[changes]] = best.group_values[changes].to(x)
    points = torch.cat([x, space.canonicalize(others)])
    values = torch.cat([best.value.reshape(1), best.value + best.group_gain[changes]])
    return values, points
