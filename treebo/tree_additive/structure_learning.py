r"""Learning the forest of a
[`TreeAdditiveGP`][treebo.tree_additive.model.TreeAdditiveGP] from data.

Paper 002 (Han et al., 2021, Alg. 3-5) samples structures $Z$ with the kernel
hyper-parameters $\theta$ held fixed, scoring each by the log marginal likelihood

$$
\rho(Z) = -\tfrac12 y^\top (K_Z + \Sigma)^{-1} y
    - \tfrac12 \log\lvert K_Z + \Sigma\rvert - \tfrac n2 \log 2\pi,
$$

and a Bernoulli($\gamma$) prior on every edge:

- **Gibbs moves** while the forest is not a spanning tree: a batch of random
  single-edge toggles is drawn (removing an edge, or adding one that joins two trees: an
  edge that would close a cycle is never proposed; connected components replace the
  paper's union-find), and the next structure is sampled from the posterior restricted
  to the current one and these neighbours,
  $P(Z) \propto \gamma^{|Z|}(1 - \gamma)^{\cdot} e^{\rho(Z)}$. The paper toggles one
  pair at a time in a fixed order; sampling among a batch takes a strongly favoured edge
  over the first acceptable one.
- **Mutations** once it is a spanning tree: a random edge is removed and the
  two trees are rejoined by one edge drawn from the posterior over a batch of
  crossing pairs (or left apart).

Scales are equalized for scoring. Each variable's scale $\sigma_i$ is fitted under the
current forest, and the fit favours that forest: a variable on many edges (the centre of
a star) gets a large scale, so every further edge it could join would get the component
scale $\sqrt{\sigma_u^2 + \sigma_v^2}$ of a strong interaction and is rejected, even
where the data call for a weak one. By default candidates are therefore scored with
every $\sigma_i$ set to their root mean square (the same total prior variance), and the
lengthscales as fitted.

The result is the structure of highest posterior ($\rho$ plus the log prior; with
$\gamma = 1/2$ the highest likelihood, as in the paper) among all that were scored.
Candidates are scored in batches: a candidate differs from the current structure in one
edge, so its Gram matrix is the current one plus the change of at most three components,
and the batch is factorized by one batched Cholesky.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import Tensor

from treebo.tree_additive.forest import check_forest, component_labels
from treebo.tree_additive.model import TreeAdditiveGP


class _StructureScorer:
    """Gram matrices and log marginal likelihoods of single-edge changes."""

    def __init__(self, model: TreeAdditiveGP, equalize_scales: bool) -> None:
        was_training = model.training
        model.eval()  # training inputs in the transformed space
        with torch.no_grad():
            kernel = model.covar_module
            if equalize_scales:
                kernel = copy.deepcopy(kernel)
                kernel.scale = (
                    kernel.scale.square().mean().sqrt().expand_as(kernel.scale)
                )
            X = model.train_inputs[0]
            self.A = (X / kernel.lengthscale.reshape(1, -1)).T.contiguous()  # d x n
            self.scale = kernel.scale.reshape(-1)
            y = model.train_targets - model.mean_module(X)
            self.y = y.reshape(-1)
            noise = model.likelihood.noise.reshape(-1)
            self.noise = noise.expand(self.y.shape[0])
            self.gram = kernel(X).to_dense()
        model.train(was_training)
        self.n = self.y.shape[0]

    def correlations(self, var: Tensor) -> Tensor:
        """``k x n x n`` 1-D correlation matrices of variables ``var``."""
        a = self.A[var]
        return (a.unsqueeze(-1) - a.unsqueeze(-2)).square_().mul_(-0.5).exp_()

    def edge_deltas(self, pairs: Tensor, add: Tensor, degree: Tensor) -> Tensor:
        r"""``k x n x n`` Gram changes of adding or removing each edge.

        Adding $(u, v)$ adds $\sigma^{uv} k_u \odot k_v$ and removes the 1-D component
        of an endpoint that had no edge; removing reverses this, restoring the 1-D
        component of an endpoint left without edges.
        """
        u, v = pairs[:, 0], pairs[:, 1]
        ku, kv = self.correlations(u), self.correlations(v)
        su, sv = self.scale[u], self.scale[v]
        sign = torch.where(add, 1.0, -1.0).to(ku)
        lone = torch.where(add, 0, 1)  # degree at which an endpoint is 1-D
        iso_u = (degree[u] == lone).to(ku) * su
        iso_v = (degree[v] == lone).to(ku) * sv
        s_uv = (su.square() + sv.square()).sqrt()
        delta = ku * kv * s_uv[:, None, None]
        delta -= ku * iso_u[:, None, None] + kv * iso_v[:, None, None]
        return delta * sign[:, None, None]

    def log_likelihood(self, gram: Tensor) -> Tensor:
        """``batch`` log marginal likelihoods (``-inf`` where not PD)."""
        K = gram + torch.diag_embed(self.noise)
        L, info = torch.linalg.cholesky_ex(K)
        ok = info == 0
        L = torch.where(ok[..., None, None], L, torch.eye(self.n).to(L))
        w = torch.linalg.solve_triangular(L, self.y.unsqueeze(-1), upper=False)
        value = -0.5 * w.square().sum((-1, -2))
        value -= L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        value -= 0.5 * self.n * math.log(2 * math.pi)
        return torch.where(ok, value, -torch.inf)


class _ForestState:
    """The current forest as sorted pair codes ``u * d + v`` (``u < v``)."""

    def __init__(self, edges: Tensor, d: int) -> None:
        self.d = d
        self.codes = torch.unique(edges[:, 0] * d + edges[:, 1])

    @property
    def num_edges(self) -> int:
        return int(self.codes.shape[0])

    def _encode(self, pairs: Tensor) -> Tensor:
        return pairs[..., 0] * self.d + pairs[..., 1]

    def _toggled(self, pair: Tensor, add: bool) -> Tensor:
        code = self._encode(pair).reshape(1)
        if add:
            return torch.cat([self.codes, code]).unique()
        return self.codes[self.codes != code]

    def tensor(self, toggle: Tensor | None = None, add: bool = True) -> Tensor:
        """``E x 2`` forest, after toggling ``toggle`` if given (not kept)."""
        codes = self.codes if toggle is None else self._toggled(toggle, add)
        return torch.stack([codes // self.d, codes % self.d], -1)

    def toggle(self, pair: Tensor, add: bool) -> None:
        self.codes = self._toggled(pair, add)

    def contains(self, pairs: Tensor) -> Tensor:
        return torch.isin(self._encode(pairs), self.codes)

    def labels(self) -> Tensor:
        return component_labels(self.tensor(), self.d)

    def degree(self) -> Tensor:
        return torch.bincount(self.tensor().reshape(-1), minlength=self.d)


def _sample_pairs(d: int, k: int, generator: torch.Generator) -> Tensor:
    """``<= k x 2`` distinct random pairs ``u < v``, in order of first draw."""
    u = torch.randint(0, d, (k,), generator=generator)
    v = torch.randint(0, d - 1, (k,), generator=generator)
    v = v + (v >= u).long()
    pairs = torch.stack([torch.minimum(u, v), torch.maximum(u, v)], -1)
    pairs, inverse = torch.unique(pairs, dim=0, return_inverse=True)
    first = torch.full((pairs.shape[0],), k, dtype=torch.long)
    first = first.scatter_reduce(0, inverse, torch.arange(k), "amin")
    return pairs[first.argsort()]


def learn_tree_structure(
    model: TreeAdditiveGP,
    num_samples: int = 500,
    gamma: float = 0.5,
    batch_size: int = 8,
    seed: int | None = None,
    equalize_scales: bool = True,
) -> Tensor:
    r"""A forest for ``model``'s data by Gibbs sampling and mutation (see module).

    The model's hyper-parameters are held fixed and its structure is not
    changed; set the result with ``model.set_edges`` (and refit).

    Args:
        model: A [`TreeAdditiveGP`][treebo.tree_additive.model.TreeAdditiveGP]; sampling
            starts from its forest.
        num_samples: How many candidate structures to score in all.
        gamma: Prior probability of an edge, in ``(0, 1)``.
        batch_size: Candidates scored per batched Cholesky. The chain makes
            one move per batch, so ``num_samples / batch_size`` moves in all.
        seed: Seed of the sampler.
        equalize_scales: Score structures with every variable's scale set to
            the root mean square of the fitted ones (same total prior
            variance). Scales fitted under a forest favour it: a variable
            joined to many others gets a large scale, which then inflates
            every edge it could join (see module).

    Returns:
        ``E x 2`` long tensor (CPU, rows sorted), the forest of highest log
        posterior among the scored structures (the starting one included).

    Example:
        >>> g = torch.Generator().manual_seed(1)
        >>> X = torch.rand(60, 4, generator=g, dtype=torch.float64)
        >>> Y = torch.sin(6 * X[:, :1] * X[:, 1:2]) + X[:, 2:3]
        >>> model = TreeAdditiveGP(X, Y)
        >>> model.covar_module.lengthscale = 0.3
        >>> learn_tree_structure(model, num_samples=100, seed=0).tolist()
        [[0, 1]]
    """
    if not isinstance(model, TreeAdditiveGP):
        raise TypeError(f"model must be a TreeAdditiveGP, got {type(model).__name__}.")
    if not 0.0 < float(gamma) < 1.0:
        raise ValueError(f"gamma must lie in (0, 1), got {gamma!r}.")
    for name, value in (("num_samples", num_samples), ("batch_size", batch_size)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    d = model.covar_module.dim
    state = _ForestState(check_forest(model.edges, d), d)
    if d < 2:
        return state.tensor()
    generator = torch.Generator()
    if seed is not None:
        generator.manual_seed(seed)
    with torch.no_grad():
        scorer = _StructureScorer(model, equalize_scales)
        sampler = _Sampler(scorer, state, gamma, generator)
        while sampler.scored < num_samples:
            k = min(batch_size, num_samples - sampler.scored)
            if state.num_edges < d - 1:
                sampler.gibbs_step(k)
            else:
                sampler.mutation_step(k)
    return sampler.best_edges


class _Sampler:
    """The chain of
    [`learn_tree_structure()`][treebo.tree_additive.structure_learning.learn_tree_structure]
    and the best structure seen."""

    def __init__(
        self,
        scorer: _StructureScorer,
        state: _ForestState,
        gamma: float,
        generator: torch.Generator,
    ) -> None:
        self.scorer, self.state, self.generator = scorer, state, generator
        self.log_odds = math.log(gamma) - math.log1p(-gamma)
        self.device = scorer.A.device
        self.gram = scorer.gram
        self.score = scorer.log_likelihood(self.gram)
        self.best_score = float(self.score) + self.log_odds * state.num_edges
        self.best_edges = state.tensor()
        self.scored = 0

    def _deltas(self, pairs: Tensor, add: Tensor, degree: Tensor) -> Tensor:
        return self.scorer.edge_deltas(
            pairs.to(self.device), add.to(self.device), degree.to(self.device)
        )

    def _record(self, scores: Tensor, sizes: Tensor, structures) -> None:
        """Keep the structure of highest log posterior (``sizes``: edge counts)."""
        self.scored += scores.shape[0]
        posterior = scores + self.log_odds * sizes.to(scores)
        top = int(posterior.argmax())
        if float(posterior[top]) > self.best_score:
            self.best_score = float(posterior[top])
            self.best_edges = structures(top)

    def gibbs_step(self, k: int) -> None:
        """Move to the current forest or one of ``k`` single-edge toggles of it.

        The candidates (existing edges to remove, edges joining two trees to
        add) are drawn at random; the move samples one of them or staying,
        with probabilities proportional to their posterior (prior times
        likelihood): a Gibbs step on that block of structures.
        """
        state = self.state
        pairs = _sample_pairs(state.d, 4 * k, self.generator)
        present = state.contains(pairs)
        labels = state.labels()
        valid = present | (labels[pairs[:, 0]] != labels[pairs[:, 1]])
        pairs, add = pairs[valid][:k], ~present[valid][:k]
        if pairs.shape[0] == 0:  # counted as one sample, so the chain ends
            self.scored += 1
            return
        grams = self.gram + self._deltas(pairs, add, state.degree())
        scores = self.scorer.log_likelihood(grams)
        sizes = state.num_edges + torch.where(add, 1, -1)
        self._record(scores, sizes, lambda i: state.tensor(pairs[i], bool(add[i])))
        prior = torch.where(add, self.log_odds, -self.log_odds).to(scores)
        logits = torch.cat([torch.zeros(1).to(scores), prior + scores - self.score])
        choice = int(
            torch.multinomial(
                torch.softmax(logits.cpu(), 0), 1, generator=self.generator
            )
        )
        if choice:
            state.toggle(pairs[choice - 1], bool(add[choice - 1]))
            self.gram, self.score = grams[choice - 1], scores[choice - 1]

    def mutation_step(self, k: int) -> None:
        """Cut a random edge; rejoin the trees by one of ``k - 1`` crossings or not."""
        state = self.state
        listed = state.tensor()
        cut = listed[
            int(torch.randint(listed.shape[0], (1,), generator=self.generator))
        ]
        degree = state.degree()
        removed = (
            self.gram
            + self._deltas(cut.reshape(1, 2), torch.tensor([False]), degree)[0]
        )
        state.toggle(cut, False)
        labels = state.labels()
        side = labels == labels[cut[0]]
        pairs = _sample_pairs(state.d, 4 * k, self.generator)
        pairs = pairs[side[pairs[:, 0]] != side[pairs[:, 1]]]
        pairs = pairs[(pairs != cut).any(-1)]
        pairs = torch.cat([cut.reshape(1, 2), pairs])[: max(1, k - 1)]
        add = torch.ones(pairs.shape[0], dtype=torch.bool)
        grams = torch.cat(
            [removed.unsqueeze(0), removed + self._deltas(pairs, add, state.degree())]
        )
        scores = self.scorer.log_likelihood(grams)
        sizes = state.num_edges + (torch.arange(grams.shape[0]) > 0).long()
        self._record(
            scores, sizes, lambda i: state.tensor(pairs[i - 1] if i else None, True)
        )
        prior = torch.full((grams.shape[0],), self.log_odds)
        prior[0] = 0.0
        weights = torch.softmax(scores.cpu() + prior, 0)
        choice = int(torch.multinomial(weights, 1, generator=self.generator))
        if choice:
            state.toggle(pairs[choice - 1], True)
        self.gram, self.score = grams[choice], scores[choice]
