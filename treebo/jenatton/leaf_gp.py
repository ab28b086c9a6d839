r"""Per-leaf GPs with a shared linear term: the ``tree`` model of Jenatton et
al. (ICML 2017), its ``tree-nonlinear`` variant, and independent GPs per leaf.

For a point $x$ on leaf $p$ (standardized outcomes),

$$
y = g_p(x) + z(x)^\top c + \varepsilon, \quad
g_p \sim \mathcal{GP}(b_p, \mathcal{K}_p), \quad
c \sim \mathcal{N}(0, \alpha^2 I), \quad \varepsilon \sim \mathcal{N}(0, \sigma^2),
$$

with $\mathcal{K}_p$ a Matern-5/2 kernel with ARD lengthscales on the leaf's
own parameters and an output scale, and $z$ the shared features
([`SharedFeatures`][treebo.jenatton.leaves.SharedFeatures]). With
$M_p = K_p + \sigma^2 I$ (Cholesky $M_p = L_p L_p^\top$, batched over leaves
padded to the largest), the coefficients have the closed-form posterior of
Jenatton et al. (2017), Sec. 2.1,

$$
c \mid y \sim \mathcal{N}(\Lambda_c^{-1} f_c, \Lambda_c^{-1}), \quad
\Lambda_c = \alpha^{-2} I + \sum_p Z_p M_p^{-1} Z_p^\top, \quad
f_c = \sum_p Z_p M_p^{-1} (y_p - b_p),
$$

and the log marginal likelihood (Sec. 2.2, evaluated at $c = 0$) is

$$
\log p(y) = \sum_p \log \mathcal{N}(y_p; b_p, M_p)
  - \tfrac{1}{2} \log |\alpha^2 I| - \tfrac{1}{2} \log |\Lambda_c|
  + \tfrac{1}{2} f_c^\top \Lambda_c^{-1} f_c .
$$

At a query $x$ on leaf $p$, with $k = k_p(x)$ and
$h(x) = z(x) - Z_p M_p^{-1} k$, the latent $f(x)$ has mean
$b_p + k^\top M_p^{-1}(y_p - b_p) + h(x)^\top \Lambda_c^{-1} f_c$ and, for two
queries $x, x'$, covariance
$[p = p'] (\mathcal{K}_p(x, x') - k^\top M_p^{-1} k') +
h(x)^\top \Lambda_c^{-1} h(x')$. Cost: $O(P m^3 + D^3)$ for $P$ leaves of at
most $m$ points and $D$ shared features; a query costs $O(P m^2 + D^2)$.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import torch
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from torch import Tensor

from treebo.jenatton.leaves import LeafLayout, SharedFeatures
from treebo.space import TreeSpace
from treebo.space.structure import HierarchicalDependencies, as_tree_structure

#: Diagonal added to the coefficients' precision and the query covariance.
JITTER = 1e-10
#: Smallest squared distance in the kernel (keeps its gradient finite at 0).
MIN_SQUARED_DISTANCE = 1e-30


def matern52(sq_dist: Tensor) -> Tensor:
    r"""$(1 + \sqrt5 r + \tfrac53 r^2) e^{-\sqrt5 r}$ of squared scaled distances."""
    r = sq_dist.clamp_min(MIN_SQUARED_DISTANCE).sqrt()
    root5 = math.sqrt(5.0) * r
    return (1.0 + root5 + root5.square() / 3.0) * torch.exp(-root5)


class LeafGP(Model):
    r"""One GP per leaf of a tree over the leaf's columns, and optionally a
    shared linear term over features of the shared parameters (module
    docstring). The base of [`JenattonTreeGP`][treebo.jenatton.model.JenattonTreeGP]
    and [`IndependentLeafGP`][treebo.jenatton.model.IndependentLeafGP].

    Args:
        train_X: ``n x d`` training inputs in the column layout of
            ``space_or_dependencies``.
        train_Y: ``n x 1`` training observations.
        space_or_dependencies: A [`TreeSpace`][treebo.space.TreeSpace] (whose
            bounds scale the real columns to the unit cube), or BoTorch's
            ``hierarchical_dependencies`` or a
            [`TreeStructure`][treebo.space.structure.TreeStructure] (real
            columns scaled by ``bounds``, else by the training data's range).
        leaf_columns: ``"own"`` (each leaf's GP sees the columns of its
            vertices on no other leaf) or ``"active"`` (every real column on
            its path).
        features: The shared features, or ``None`` for no shared term.
        bounds: ``2 x d`` bounds of the inputs (only without a space).
        noise_floor: Lower bound of $\sigma^2$ (standardized outcomes).
    """

    num_outputs = 1

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        space_or_dependencies: TreeSpace | HierarchicalDependencies,
        leaf_columns: str = "own",
        features: SharedFeatures | None = None,
        bounds: Tensor | None = None,
        noise_floor: float = 1e-6,
    ) -> None:
        super().__init__()
        train_X, train_Y = _checked_data(train_X, train_Y)
        d = train_X.shape[-1]
        if isinstance(space_or_dependencies, TreeSpace):
            space = space_or_dependencies
            if space.dim != d:
                raise ValueError(
                    f"train_X has {d} columns but the space has {space.dim}."
                )
            tree, bounds = space.tree, space.bounds
        else:
            tree = as_tree_structure(d, space_or_dependencies)
        if leaf_columns not in ("own", "active"):
            raise ValueError(
                f"leaf_columns must be 'own' or 'active', got {leaf_columns!r}."
            )
        if features is not None and features.layout.tree is not tree:
            raise ValueError("features: built for another tree than the model's.")
        if isinstance(noise_floor, bool) or not (
            isinstance(noise_floor, (int, float)) and noise_floor > 0
        ):
            raise ValueError(f"noise_floor must be positive, got {noise_floor!r}.")
        layout = features.layout if features is not None else LeafLayout(tree)
        self.layout = layout
        self.features = features
        self.noise_floor = float(noise_floor)
        factory = {"dtype": train_X.dtype, "device": train_X.device}
        real = torch.tensor(tree.continuous_columns, dtype=torch.long)
        low = train_X.new_zeros(d)
        width = train_X.new_ones(d)
        if real.numel():
            if bounds is not None:
                span = torch.as_tensor(bounds, **factory)[:, real]
            else:
                span = torch.stack(
                    [train_X[:, real].min(0).values, train_X[:, real].max(0).values]
                )
            low[real] = span[0]
            width[real] = (span[1] - span[0]).clamp_min(1e-12)
        self.register_buffer("input_low", low)
        self.register_buffer("input_width", width)
        mask = layout.own_columns if leaf_columns == "own" else layout.active_columns
        # Each leaf's columns, padded to the most any leaf has: P x k.
        counts = mask.sum(-1)
        k = max(int(counts.max()), 1)
        order = torch.argsort((~mask).to(torch.int8), dim=-1, stable=True)[:, :k]
        valid = torch.arange(k) < counts.unsqueeze(-1)
        self.register_buffer("leaf_columns", (order * valid).to(train_X.device))
        self.register_buffer("leaf_column_valid", valid.to(**factory))
        self.train_inputs = (train_X,)
        self.train_targets = train_Y.squeeze(-1)
        self._build_leaf_data(train_X, train_Y)
        P = layout.num_leaves
        dims = counts.clamp_min(1).to(**factory)  # P
        self.register_buffer("leaf_dims", dims)
        self.raw_lengthscale = torch.nn.Parameter(
            (0.5 * dims.sqrt()).log().unsqueeze(-1).expand(P, k).clone()
        )
        self.raw_outputscale = torch.nn.Parameter(torch.zeros(P, **factory))
        self.leaf_mean = torch.nn.Parameter(torch.zeros(P, **factory))
        self.raw_noise = torch.nn.Parameter(torch.tensor(math.log(1e-2), **factory))
        self.raw_coefficient_variance = torch.nn.Parameter(torch.zeros((), **factory))
        self._cache: dict[str, Tensor] | None = None

    # ----------------------------------------------------------------- data
    def _build_leaf_data(self, X: Tensor, Y: Tensor) -> None:
        """Standardize the outcomes and pad each leaf's points to ``m``."""
        n = X.shape[0]
        y = Y.squeeze(-1)
        self.y_mean = y.mean()
        self.y_std = y.std() if n > 1 and float(y.std()) > 0 else y.new_ones(())
        y = (y - self.y_mean) / self.y_std
        leaf = self.layout.leaf_of(X)
        P = self.layout.num_leaves
        counts = torch.bincount(leaf, minlength=P)
        m = max(int(counts.max()), 1)
        order = torch.argsort(leaf, stable=True)
        starts = torch.cumsum(counts, 0) - counts
        position = torch.arange(n, device=X.device) - starts[leaf[order]]
        index = torch.full((P, m), -1, dtype=torch.long, device=X.device)
        index[leaf[order], position] = order
        valid = index >= 0
        safe = index.clamp_min(0)
        self.leaf_index = index  # P x m, -1 for padding
        self.leaf_valid = valid
        self.leaf_X = self.scale_inputs(X)[safe] * valid.unsqueeze(-1).to(X)
        self.leaf_y = y[safe] * valid.to(y)
        if self.features is not None:
            Z = self.features(self.scale_inputs(X))
            self.leaf_Z = Z[safe] * valid.unsqueeze(-1).to(Z)  # P x m x D

    def scale_inputs(self, X: Tensor) -> Tensor:
        """Real columns to the unit cube (choice columns unchanged)."""
        return (X - self.input_low) / self.input_width

    # -------------------------------------------------------- hyperparameters
    @property
    def lengthscale(self) -> Tensor:
        """``P x k`` ARD lengthscales of each leaf's columns (``leaf_columns``;
        padding entries do not matter)."""
        return self.raw_lengthscale.exp()

    @property
    def outputscale(self) -> Tensor:
        """``P`` output scales of the leaf GPs."""
        return self.raw_outputscale.exp()

    @property
    def noise(self) -> Tensor:
        r"""$\sigma^2$ (standardized outcomes), at least ``noise_floor``."""
        return self.noise_floor + self.raw_noise.exp()

    @property
    def coefficient_variance(self) -> Tensor:
        r"""$\alpha^2$, the prior variance of each shared coefficient."""
        return self.raw_coefficient_variance.exp()

    def log_prior(self) -> Tensor:
        """Log density of the hyper-priors (up to constants): LogNormal
        lengthscales scaled by each leaf's dimension (as BoTorch's defaults),
        LogNormal output scales, noise and coefficient variance, N(0, 1)
        leaf means."""
        loc = math.sqrt(2.0) + 0.5 * self.leaf_dims.log()  # P
        z = (self.raw_lengthscale - loc.unsqueeze(-1)) / math.sqrt(3.0)
        total = -0.5 * (z.square() * self.leaf_column_valid).sum()
        total = total - 0.5 * self.raw_outputscale.square().sum()
        total = total - 0.5 * self.leaf_mean.square().sum()
        total = total - 0.5 * (self.noise.log() + 4.0).square()
        if self.features is not None:
            total = total - 0.5 * self.raw_coefficient_variance.square()
        return total

    # ---------------------------------------------------------------- kernel
    def leaf_kernel(self, X1: Tensor, X2: Tensor, leaf: Tensor) -> Tensor:
        """Covariance of leaf GPs, each row with its leaf's hyper-parameters.

        Args:
            X1: ``... x a x d`` scaled inputs.
            X2: ``... x b x d`` scaled inputs.
            leaf: ``... x a`` the leaf whose kernel each row of ``X1`` uses.

        Returns:
            ``... x a x b``.
        """
        columns = self.leaf_columns[leaf]  # ... x a x k
        inverse = self.leaf_column_valid[leaf] / self.lengthscale[leaf]
        A = X1.gather(-1, columns)  # ... x a x k
        shape = (*columns.shape[:-1], X2.shape[-2], columns.shape[-1])
        B = X2.unsqueeze(-3).expand(*shape[:-1], X2.shape[-1])
        B = B.gather(-1, columns.unsqueeze(-2).expand(shape))  # ... x a x b x k
        diff = (A.unsqueeze(-2) - B) * inverse.unsqueeze(-2)
        return self.outputscale[leaf].unsqueeze(-1) * matern52(diff.square().sum(-1))

    def _factors(self, coefficients: bool = False) -> dict[str, Tensor]:
        r"""Cholesky factors and solves of the training data (module docstring).

        With shared features, the coefficients' precision $\Lambda_c$ is
        factored (``D x D``) if ``coefficients`` is set or ``D`` is at most
        the ``N`` padded data rows; otherwise the marginal likelihood takes
        the equivalent ``N x N`` form $I + \alpha^2 A A^\top$ with
        $A = [L_p^{-1} Z_p^\top]_p$ (matrix determinant lemma and
        push-through identity), which is cheaper when $D > N$.
        """
        P, m = self.leaf_valid.shape
        valid = self.leaf_valid.to(self.leaf_X)
        rows = torch.arange(P, device=valid.device).unsqueeze(-1).expand(P, m)
        K = self.leaf_kernel(self.leaf_X, self.leaf_X, rows)
        K = K * valid.unsqueeze(-1) * valid.unsqueeze(-2)
        diagonal = torch.where(self.leaf_valid, self.noise, torch.ones_like(valid))
        L = torch.linalg.cholesky(K + torch.diag_embed(diagonal))
        residual = (self.leaf_y - self.leaf_mean.unsqueeze(-1)) * valid
        a = torch.linalg.solve_triangular(L, residual.unsqueeze(-1), upper=False)
        out = {"L": L, "a": a.squeeze(-1), "valid_count": valid.sum()}
        if self.features is None or not self.features.num_outputs:
            return out
        A = torch.linalg.solve_triangular(L, self.leaf_Z, upper=False)  # P x m x D
        out["A"] = A
        D, N = A.shape[-1], P * m
        eye = partial(torch.eye, dtype=A.dtype, device=A.device)
        if coefficients or D <= N:
            precision = torch.einsum("pmi,pmj->ij", A, A)
            precision = precision + eye(D) * (1.0 / self.coefficient_variance + JITTER)
            f = torch.einsum("pmi,pm->i", A, out["a"])
            Lc = torch.linalg.cholesky(precision)
            u = torch.linalg.solve_triangular(Lc, f.unsqueeze(-1), upper=False)
            out.update(Lc=Lc, f=f, u=u.squeeze(-1))
        else:
            A_rows = A.reshape(N, D)
            G = self.coefficient_variance * (A_rows @ A_rows.T) + eye(N)
            Lg = torch.linalg.cholesky(G)
            w = torch.linalg.solve_triangular(Lg, out["a"].reshape(N, 1), upper=False)
            out.update(Lg=Lg, w=w.squeeze(-1))
        return out

    def marginal_log_likelihood(self) -> Tensor:
        r"""$\log p(y)$ of the standardized training outcomes (module docstring)."""
        F = self._factors()
        n = F["valid_count"]
        value = -F["L"].diagonal(dim1=-2, dim2=-1).log().sum()
        value = value - 0.5 * n * math.log(2 * math.pi)
        if "Lg" in F:  # N x N form: -1/2 a'(I + s AA')^-1 a - 1/2 log|I + s AA'|
            return value - 0.5 * F["w"].square().sum() - F["Lg"].diagonal().log().sum()
        value = value - 0.5 * F["a"].square().sum()
        if "Lc" in F:
            D = F["f"].shape[0]
            value = value - 0.5 * D * self.coefficient_variance.log()
            value = value - F["Lc"].diagonal().log().sum()
            value = value + 0.5 * F["u"].square().sum()
        return value

    def coefficient_posterior(self) -> tuple[Tensor, Tensor]:
        r"""Mean and covariance of $c \mid y$ (standardized outcomes):
        $\Lambda_c^{-1} f_c$ and $\Lambda_c^{-1}$ (``D`` and ``D x D``)."""
        F = self._factors(coefficients=True)
        if "Lc" not in F:
            raise ValueError("the model has no shared term.")
        covariance = torch.cholesky_inverse(F["Lc"])
        return covariance @ F["f"], covariance

    # ------------------------------------------------------------- posterior
    def train(self, mode: bool = True) -> LeafGP:
        self._cache = None  # parameters may change in train mode
        return super().train(mode)

    def _prediction_cache(self) -> dict[str, Tensor]:
        if self._cache is not None and not self.training:
            return self._cache
        F = self._factors(coefficients=True)
        L = F["L"]
        eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        L_inv = torch.linalg.solve_triangular(L, eye, upper=False)  # P x m x m
        cache = {
            "L_inv": L_inv,
            "alpha": (L_inv.transpose(-1, -2) @ F["a"].unsqueeze(-1)).squeeze(-1),
        }
        if "Lc" in F:
            Lc_inv = torch.linalg.solve_triangular(
                F["Lc"], torch.eye(F["Lc"].shape[0]).to(L), upper=False
            )
            cache["B"] = L_inv.transpose(-1, -2) @ F["A"]  # M^-1 Z^T: P x m x D
            cache["coef_mean"] = Lc_inv.transpose(-1, -2) @ F["u"]
            cache["Lc_inv"] = Lc_inv
        if not self.training:
            self._cache = cache
        return cache

    def latent_moments(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Mean (``... x q``) and covariance (``... x q x q``) of the latent
        function at ``... x q x d`` inputs, in standardized units."""
        C = self._prediction_cache()
        leaf = self.layout.leaf_of(X)  # ... x q
        Xs = self.scale_inputs(X)
        P, m = self.leaf_valid.shape
        data = self.leaf_X.reshape(P * m, -1)
        slot_leaf = torch.arange(P, device=X.device).repeat_interleave(m)
        own = (slot_leaf == leaf.unsqueeze(-1)) & self.leaf_valid.reshape(-1)
        k = self.leaf_kernel(Xs, data, leaf) * own.to(Xs)  # ... x q x Pm
        k = k.unflatten(-1, (P, m))  # ... x q x P x m
        mean = self.leaf_mean[leaf] + torch.einsum("...qpm,pm->...q", k, C["alpha"])
        v = torch.einsum("...qpm,pnm->...qpn", k, C["L_inv"])
        same = (leaf.unsqueeze(-1) == leaf.unsqueeze(-2)).to(Xs)
        cov = self.leaf_kernel(Xs, Xs, leaf) * same
        cov = cov - torch.einsum("...apn,...bpn->...ab", v, v)
        if "B" in C:
            h = self.features(Xs) - torch.einsum("...qpm,pmi->...qi", k, C["B"])
            mean = mean + h @ C["coef_mean"]
            w = h @ C["Lc_inv"].transpose(-1, -2)
            cov = cov + w @ w.transpose(-1, -2)
        return mean, cov

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: Any = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """The posterior at ``batch x q x d`` inputs (a ``d`` or ``q x d``
        tensor is one batch), in the outcomes' units.

        Args:
            X: Inputs in the training data's column layout.
            output_indices: Must be ``None`` or ``[0]`` (one output).
            observation_noise: Add the fitted noise variance.
            posterior_transform: Applied to the posterior if given.
        """
        if output_indices not in (None, [0]):
            raise ValueError(f"the model has one output, got {output_indices}.")
        X = X.unsqueeze(0) if X.dim() == 1 else X
        mean, cov = self.latent_moments(X)
        q = mean.shape[-1]
        eye = torch.eye(q, dtype=X.dtype, device=X.device)
        if observation_noise is not False:
            cov = cov + self.noise * eye
        cov = (cov + JITTER * eye) * self.y_std.square()
        mean = self.y_mean + self.y_std * mean
        posterior = GPyTorchPosterior(MultivariateNormal(mean, cov))
        if posterior_transform is not None:
            return posterior_transform(posterior)
        return posterior

    @property
    def batch_shape(self) -> torch.Size:
        return torch.Size()


def _checked_data(train_X: Tensor, train_Y: Tensor) -> tuple[Tensor, Tensor]:
    if not (isinstance(train_X, Tensor) and train_X.dim() == 2):
        raise ValueError(
            "train_X must be an n x d tensor, got "
            f"{getattr(train_X, 'shape', type(train_X).__name__)}."
        )
    if not isinstance(train_Y, Tensor) or train_Y.shape != (train_X.shape[0], 1):
        raise ValueError(
            f"train_Y must be an n x 1 tensor with n = {train_X.shape[0]}, got "
            f"{getattr(train_Y, 'shape', type(train_Y).__name__)}."
        )
    if train_X.shape[0] < 1:
        raise ValueError("train_X must hold at least one point.")
    if not (train_X.isfinite().all() and train_Y.isfinite().all()):
        raise ValueError("train_X and train_Y must be finite.")
    return train_X, train_Y
