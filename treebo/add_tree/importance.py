r"""Which vertices of the tree matter: variance shares of the Add-Tree posterior mean.

The Add-Tree GP is a sum of one component per vertex, each switched on where its
vertex is active: $f(x) = \sum_v \delta_v(x) f_v(x_v)$. Its posterior mean splits the
same way, $m(x) = c + \sum_v \delta_v(x) m_v(x_v)$
([`AddTreeGP.vertex_posterior()`][treebo.add_tree.model.AddTreeGP.vertex_posterior]).
The importance of vertex $v$ is the variance of its gated term over a set of
configurations (the evaluated ones, say), as a share of the summed variances:

$$
I_v = \frac{\operatorname{Var}_x[\delta_v(x) m_v(x_v)]}
           {\sum_u \operatorname{Var}_x[\delta_u(x) m_u(x_u)]}.
$$

This is the functional ANOVA of the fitted model read off its own additive structure
(as fANOVA does for a random forest, without sampling): a vertex whose parameters move
the prediction, or whose activity switches a large offset on and off, gets a large
share. Parameters that share a vertex share its importance (its kernel is a product
over them). Covariances between the terms are left out of the denominator, so the
shares add up to one.

Example:
    >>> from treebo.add_tree import AddTreeGP
    >>> from treebo.gp.fit import fit_model
    >>> from treebo.test_functions import Jenatton
    >>> problem = Jenatton()
    >>> X = problem.space.sample(40, seed=0)
    >>> model = fit_model(AddTreeGP(X, problem(X).unsqueeze(-1), problem.space.tree))
    >>> shares = vertex_importances(model, X)
    >>> shares.shape, round(float(shares.sum()), 6)
    (torch.Size([7]), 1.0)
"""

from __future__ import annotations

from torch import Tensor

from treebo.add_tree.model import AddTreeGP
from treebo.space.structure import as_tree_structure


def vertex_importances(model: AddTreeGP, X: Tensor) -> Tensor:
    """Each vertex's share of the variance of the posterior mean over ``X``.

    Args:
        model: A fitted [`AddTreeGP`][treebo.add_tree.model.AddTreeGP] with one
            outcome and no batch dimensions.
        X: ``n x d`` configurations (raw inputs) to take the variances over, ``n >= 2``.

    Returns:
        A ``V`` tensor of shares (vertices in ``model.tree``'s order) that sums to one
        (all zeros if the mean is constant over ``X``).
    """
    if X.dim() != 2 or X.shape[0] < 2:
        raise ValueError(f"X must be n x d with n >= 2, got shape {tuple(X.shape)}.")
    terms = model.vertex_posterior(X).mean  # n x V, as if every vertex were active
    raw_tree = as_tree_structure(X.shape[-1], model.hierarchical_dependencies)
    active = raw_tree.vertex_activity(X)  # n x V, on the raw choice values
    variance = (terms * active).var(dim=0)
    total = variance.sum()
    return variance / total if bool(total > 0) else variance.zero_()
