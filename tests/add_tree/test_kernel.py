"""AddTreeKernel against Definition 4, BoTorch's kernel, and kernel invariants."""

from __future__ import annotations

import pytest
import torch
from botorch.models.hierarchical import HierarchicalConditionalKernel

from tests.conftest import random_points, random_tree
from treebo.add_tree import AddTreeKernel
from treebo.gp import stationary_correlation
from treebo.space.structure import TreeStructure
from treebo.test_functions import Jenatton


def float64_kernel(*args, **kwargs) -> AddTreeKernel:
    """An ``AddTreeKernel`` in float64, as the models and the loop use it."""
    return AddTreeKernel(*args, **kwargs).double()


def _on(tree: TreeStructure, v: int, x: torch.Tensor) -> bool:
    return all(
        any(abs(x[c] - val) < 1e-9 for val in values)
        for c, values in tree.vertex_conditions(v)
    )


def _columns(kernel: AddTreeKernel, v: int) -> list[int]:
    """The columns vertex ``v``'s kernel reads: its own, then (where the kernel
    ``reads_ancestors``) its parent's, grandparent's, ... up to the root."""
    vertices = kernel.tree.vertices
    cols = list(vertices[v].continuous_columns)
    parent = vertices[v].parent
    while kernel.reads_ancestors and parent is not None:
        cols += vertices[parent].continuous_columns
        parent = vertices[parent].parent
    return cols


def _scaled(kernel: AddTreeKernel, v: int, x: torch.Tensor) -> torch.Tensor:
    """Vertex ``v``'s continuous values of ``x`` over its lengthscales, padded."""
    cols = _columns(kernel, v)
    z = torch.zeros(kernel.lengthscale.shape[-1], dtype=x.dtype)
    z[: len(cols)] = x[cols] / kernel.lengthscale.detach()[v, : len(cols)]
    return z


def brute_force_shared_gram(kernel: AddTreeKernel, X1, X2) -> torch.Tensor:
    """The slots' shared components as a loop over pairs of vertices: tau_s
    kappa(z_u - z'_w) for active u, w with parameters in the same slot s."""
    tree = kernel.tree
    tau = kernel.slot_outputscale.detach()
    with_params = [v.index for v in tree.vertices if _columns(kernel, v.index)]
    K = torch.zeros(X1.shape[0], X2.shape[0], dtype=torch.float64)
    for i in range(X1.shape[0]):
        for j in range(X2.shape[0]):
            for u in with_params:
                for w in with_params:
                    s = int(tree.vertex_slots[u])
                    if s != int(tree.vertex_slots[w]):
                        continue
                    if not (_on(tree, u, X1[i]) and _on(tree, w, X2[j])):
                        continue
                    r2 = (_scaled(kernel, u, X1[i]) - _scaled(kernel, w, X2[j])) ** 2
                    K[i, j] += tau[s] * stationary_correlation(
                        r2.sum(), kernel.base_kernel
                    )
    return K


def brute_force_gram(kernel: AddTreeKernel, X1: torch.Tensor, X2: torch.Tensor):
    """Definition 4 as a double loop: sum over shared vertices of k_v."""
    tree = kernel.tree
    ls, scale = kernel.lengthscale.detach(), kernel.effective_outputscale().detach()
    offset = kernel.effective_offset().detach()
    K = torch.zeros(X1.shape[0], X2.shape[0], dtype=torch.float64)
    if kernel.shared_component:
        K += brute_force_shared_gram(kernel, X1, X2)
    for i in range(X1.shape[0]):
        for j in range(X2.shape[0]):
            for v in tree.vertices:
                if not (_on(tree, v.index, X1[i]) and _on(tree, v.index, X2[j])):
                    continue
                K[i, j] += offset[v.index]
                cols = _columns(kernel, v.index)
                if not cols:
                    continue
                r2 = (
                    ((X1[i, cols] - X2[j, cols]) / ls[v.index, : len(cols)]) ** 2
                ).sum()
                K[i, j] += scale[v.index] * stationary_correlation(
                    r2, kernel.base_kernel
                )
    return K


def assert_matches_brute_force(kernel: AddTreeKernel, X1, X2) -> torch.Tensor:
    """The Gram matrix and its diagonal against :func:`brute_force_gram`;
    returns the Gram matrix."""
    K = kernel(X1, X2).to_dense().detach()
    torch.testing.assert_close(K, brute_force_gram(kernel, X1, X2), atol=1e-10, rtol=0)
    diag = kernel(X1, X1, diag=True).detach()
    torch.testing.assert_close(diag, brute_force_gram(kernel, X1, X1).diag())
    return K


def gradcheck_parameters(kernel: AddTreeKernel, names, X1, X2) -> bool:
    """``gradcheck`` of the Gram matrix with respect to the named raw parameters."""
    values = tuple(
        kernel.get_parameter(n).detach().clone().requires_grad_(True) for n in names
    )

    def gram(*raw):
        params = dict(zip(names, raw, strict=True))
        return torch.func.functional_call(kernel, params, (X1, X2)).to_dense()

    return torch.autograd.gradcheck(gram, values)


def randomize(kernel: AddTreeKernel, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    kernel.lengthscale = 0.2 + torch.rand(
        kernel.lengthscale.shape, generator=g, dtype=torch.float64
    )
    kernel.outputscale = 0.1 + torch.rand(
        kernel.outputscale.shape, generator=g, dtype=torch.float64
    )
    if kernel.vertex_bias != "none":
        kernel.vertex_offset = 0.1 + torch.rand(
            kernel.outputscale.shape, generator=g, dtype=torch.float64
        )
    if kernel.shared_component:
        shape = kernel.slot_outputscale.shape
        kernel.slot_outputscale = 0.1 + torch.rand(
            shape, generator=g, dtype=torch.float64
        )


@pytest.mark.parametrize("base_kernel", ["rbf", "matern52"])
@pytest.mark.parametrize("vertex_bias", [False, True, "all"])
def test_matches_brute_force_definition_4(tree_case, base_kernel, vertex_bias):
    d, deps = tree_case
    kernel = float64_kernel(d, deps, base_kernel=base_kernel, vertex_bias=vertex_bias)
    randomize(kernel, 0)
    X1, X2 = random_points(d, deps, 9, 1), random_points(d, deps, 7, 2)
    assert_matches_brute_force(kernel, X1, X2)


@pytest.mark.parametrize("base_kernel", ["rbf", "matern52"])
@pytest.mark.parametrize("vertex_bias", [False, "all"])
def test_shared_component_matches_brute_force(tree_case, base_kernel, vertex_bias):
    d, deps = tree_case
    kernel = float64_kernel(
        d, deps, base_kernel=base_kernel, vertex_bias=vertex_bias, shared_component=True
    )
    randomize(kernel, 1)
    X1, X2 = random_points(d, deps, 8, 3), random_points(d, deps, 6, 4)
    K = assert_matches_brute_force(kernel, X1, X2)
    # Points on different branches of a slot now covary; Definition 4 alone
    # (the same kernel without the component) gives a different Gram matrix.
    plain = float64_kernel(d, deps, base_kernel=base_kernel, vertex_bias=vertex_bias)
    plain.load_state_dict(kernel.state_dict(), strict=False)
    shared = brute_force_shared_gram(kernel, X1, X2)
    torch.testing.assert_close(K - plain(X1, X2).to_dense().detach(), shared)
    assert shared.abs().max() > 1e-3


@pytest.mark.parametrize("vertex_bias", [False, "all"])
@pytest.mark.parametrize("shared_component", [False, True])
def test_precomputed_features_give_the_same_covariance_and_gradients(
    tree_case, vertex_bias, shared_component
):
    d, deps = tree_case
    kernel = float64_kernel(
        d, deps, vertex_bias=vertex_bias, shared_component=shared_component
    )
    randomize(kernel, 2)
    X1, X2 = random_points(d, deps, 5, 5), random_points(d, deps, 7, 6)
    with torch.no_grad():
        features = kernel.slot_features(X2)
    grads = []
    for given in (None, features):
        x = X1.clone().requires_grad_(True)
        K = kernel.forward(x, X2, x2_features=given)
        (grad,) = torch.autograd.grad(K.sum(), x)
        grads.append((K.detach(), grad))
    assert torch.equal(grads[0][0], grads[1][0])
    assert torch.equal(grads[0][1], grads[1][1])
    # The features are what is read of the second argument.
    other = random_points(d, deps, 7, 7)
    with torch.no_grad():
        read = kernel.forward(X1, X2, x2_features=kernel.slot_features(other))
        torch.testing.assert_close(read, kernel.forward(X1, other))
        # And of the first, in the cross-covariance and its diagonal.
        read = kernel.forward(other, X2, x1_features=kernel.slot_features(X1))
        torch.testing.assert_close(read, kernel.forward(X1, X2))
        diag = kernel.forward(X1, X1, diag=True, x1_features=kernel.slot_features(X1))
        assert torch.equal(diag, kernel.forward(X1, X1, diag=True))


class AncestorReadingKernel(AddTreeKernel):
    """Every vertex's term reads its ancestors' parameters (the hook that
    ``AncestorInteractionKernel`` and a benchmark variant use)."""

    reads_ancestors = True


@pytest.mark.parametrize("base_kernel", ["rbf", "matern52"])
@pytest.mark.parametrize("shared_component", [False, True])
def test_terms_that_read_ancestors_match_brute_force(
    tree_case, base_kernel, shared_component
):
    d, deps = tree_case
    kwargs = dict(
        base_kernel=base_kernel, vertex_bias="all", shared_component=shared_component
    )
    kernel = AncestorReadingKernel(d, deps, **kwargs).double()
    randomize(kernel, 2)
    X1, X2 = random_points(d, deps, 8, 5), random_points(d, deps, 6, 6)
    K = assert_matches_brute_force(kernel, X1, X2)
    assert torch.linalg.eigvalsh(kernel(X1).to_dense().detach()).min() > -1e-10
    # Where a vertex with parameters lies below another, its term differs
    # from the vertex's own-columns term of Definition 4.
    inherits = any(
        v.continuous_columns
        and len(_columns(kernel, v.index)) > len(v.continuous_columns)
        for v in kernel.tree.vertices
    )
    plain = float64_kernel(d, deps, **kwargs)
    raw = kernel.state_dict().items()
    plain.load_state_dict(
        {k: v for k, v in raw if k.startswith("raw_") and "lengthscale" not in k},
        strict=False,
    )
    plain.lengthscale = kernel.lengthscale.detach()[..., : plain.lengthscale.shape[-1]]
    same = torch.allclose(plain(X1, X2).to_dense().detach(), K)
    assert same != inherits


def test_shared_component_gram_is_psd_and_differentiable():
    d, deps = random_tree(2, max_depth=3)
    kernel = float64_kernel(d, deps, vertex_bias="all", shared_component=True)
    randomize(kernel, 6)
    X = random_points(d, deps, 40, 7)
    K = kernel(X).to_dense().detach()
    torch.testing.assert_close(K, K.T)
    assert torch.linalg.eigvalsh(K).min() > -1e-10
    X1, X2 = random_points(d, deps, 5, 8), random_points(d, deps, 4, 9)
    assert gradcheck_parameters(
        kernel, ("raw_slot_outputscale", "raw_lengthscale"), X1, X2
    )


def test_high_dimensional_vertices_use_the_same_definition():
    # Vertices with > 4 columns take the matrix-product distance path.
    d, deps = random_tree(3, max_depth=2, max_vertex_dim=7)
    kernel = float64_kernel(d, deps)
    randomize(kernel, 1)
    X1, X2 = random_points(d, deps, 8, 3), random_points(d, deps, 6, 4)
    torch.testing.assert_close(
        kernel(X1, X2).to_dense().detach(),
        brute_force_gram(kernel, X1, X2),
        atol=1e-9,
        rtol=0,
    )


def test_gram_is_symmetric_psd(tree_case):
    d, deps = tree_case
    kernel = float64_kernel(d, deps, base_kernel="matern52")
    randomize(kernel, 2)
    X = random_points(d, deps, 40, 5)
    K = kernel(X).to_dense().detach()
    torch.testing.assert_close(K, K.T)
    assert torch.linalg.eigvalsh(K).min() > -1e-9


def test_equals_botorch_hierarchical_kernel_when_configured_alike():
    # Jenatton-like tree plus a root column: both kernels sum Matern-5/2 ARD
    # blocks over shared vertices when BoTorch ignores the choice columns.
    deps = {1: {0: [2, 3], 1: [4, 5]}, 3: {0: [6], 1: [7]}, 5: {0: [8, 9], 1: [10]}}
    d = 11
    ours = float64_kernel(d, deps, base_kernel="matern52")
    theirs = HierarchicalConditionalKernel(
        d, deps, eval_hierarchical_features=False, use_saas_prior=False
    ).double()
    g = torch.Generator().manual_seed(0)
    tree = ours.tree
    ls = torch.ones_like(ours.lengthscale.detach())
    scales = torch.ones_like(ours.outputscale.detach())
    for block, sub in zip(theirs.partition, theirs.kernels, strict=False):
        v = next(u.index for u in tree.vertices if list(u.continuous_columns) == block)
        block_ls = 0.3 + torch.rand(len(block), generator=g, dtype=torch.float64)
        ls[v, : len(block)] = block_ls
        scales[v] = 0.5 + torch.rand((), generator=g, dtype=torch.float64)
        sub.base_kernel.lengthscale = block_ls.unsqueeze(0)
        sub.outputscale = scales[v]
    ours.lengthscale = ls
    ours.outputscale = scales
    X1, X2 = random_points(d, deps, 12, 6), random_points(d, deps, 10, 7)
    torch.testing.assert_close(
        ours(X1, X2).to_dense().detach(), theirs(X1, X2).to_dense().detach()
    )


@pytest.mark.parametrize("base_kernel", ["rbf", "matern52"])
@pytest.mark.parametrize("max_vertex_dim", [2, 6])
def test_gradcheck_inputs_and_hyperparameters(base_kernel, max_vertex_dim):
    # max_vertex_dim 6 takes the matrix-product distance path.
    d, deps = random_tree(4, max_depth=2, max_vertex_dim=max_vertex_dim)
    kernel = float64_kernel(d, deps, base_kernel=base_kernel)
    randomize(kernel, 3)
    X1, X2 = random_points(d, deps, 5, 8), random_points(d, deps, 4, 9)
    cont = torch.zeros(d, dtype=torch.bool)
    cont[list(kernel.tree.continuous_columns)] = True

    def f(a, b):
        x1 = torch.where(cont, a, X1)
        x2 = torch.where(cont, b, X2)
        return kernel(x1, x2).to_dense()

    a, b = X1.clone().requires_grad_(True), X2.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(f, (a, b))

    assert gradcheck_parameters(kernel, ("raw_lengthscale", "raw_outputscale"), X1, X2)


def test_batch_shapes_broadcast_and_do_not_mix():
    d, deps = random_tree(5, max_depth=2)
    kernel = float64_kernel(d, deps)
    randomize(kernel, 4)
    X = torch.stack([random_points(d, deps, 6, s) for s in range(3)])  # 3 x 6 x d
    Y = random_points(d, deps, 4, 10)
    K = kernel(X, Y).to_dense()
    assert K.shape == (3, 6, 4)
    for b in range(3):
        torch.testing.assert_close(K[b], kernel(X[b], Y).to_dense())
    X2 = X.unsqueeze(0).expand(2, 3, 6, d)
    assert kernel(X2, X2).to_dense().shape == (2, 3, 6, 6)
    assert kernel(X2, X2, diag=True).shape == (2, 3, 6)


def test_kernel_hyperparameter_batch():
    d, deps = random_tree(1, max_depth=2)
    kernel = float64_kernel(d, deps, batch_shape=torch.Size([2]))
    kernel.outputscale = torch.tensor([[1.0], [2.0]])
    X = random_points(d, deps, 5, 0)
    K = kernel(X).to_dense()
    assert K.shape == (2, 5, 5)
    torch.testing.assert_close(K[1], 2 * K[0])


def test_shared_lengthscales_tie_vertices_by_depth():
    deps = {0: {0: [1, 2], 1: [3, 4]}, 2: {0: [5], 1: [6]}, 4: {0: [7], 1: [8]}}
    kernel = float64_kernel(9, deps, share_lengthscales="depth")
    tree = kernel.tree
    assert kernel.raw_lengthscale.shape[-2] == len({v.depth for v in tree.vertices})
    kernel.lengthscale = torch.arange(1, tree.num_vertices + 1.0).unsqueeze(-1)
    depth = torch.tensor([v.depth for v in tree.vertices])
    ls = kernel.lengthscale.squeeze(-1)
    for dep in depth.unique():
        assert ls[depth == dep].unique().numel() == 1
    with pytest.raises(ValueError, match="share_lengthscales"):
        float64_kernel(9, deps, share_lengthscales="sibling")


def test_shared_outputscales_equal_a_kernel_with_tied_scales():
    deps = {0: {0: [1, 2], 1: [3, 4]}, 2: {0: [5], 1: [6]}, 4: {0: [7], 1: [8]}}
    shared = float64_kernel(9, deps, share_outputscales="depth")
    tree = shared.tree
    depth = torch.tensor([v.depth for v in tree.vertices])
    num_depths = depth.unique().numel()
    assert shared.raw_outputscale.shape[-1] == num_depths
    # The prior is on the group scales: one term per depth, not per vertex.
    closure = next(c for n, _, _, c, _ in shared.named_priors() if "outputscale" in n)
    assert closure(shared).shape[-1] == num_depths
    group_scales = torch.arange(1.0, num_depths + 1.0, dtype=torch.float64)
    shared.outputscale = group_scales[depth]
    torch.testing.assert_close(shared.outputscale, group_scales[depth])
    # Same Gram matrix as an unshared kernel given the tied per-vertex scales.
    free = float64_kernel(9, deps)
    free.outputscale = group_scales[depth]
    X = Jenatton("paper").space.sample(12, seed=3)
    torch.testing.assert_close(
        shared(X).to_dense().detach(), free(X).to_dense().detach()
    )
    with pytest.raises(ValueError, match="share_outputscales"):
        float64_kernel(9, deps, share_outputscales="sibling")


@pytest.mark.parametrize("share", ["none", "depth", "all"])
@pytest.mark.parametrize("batch_shape", [torch.Size(), torch.Size([3])])
def test_sampling_the_priors_keeps_parameter_shapes(share, batch_shape):
    # fit_gpytorch_mll retries from sample_all_priors, which draws
    # prior.sample(param.shape): a G x D_max prior appends its own shape.
    from botorch.optim.utils import sample_all_priors

    deps = {0: {0: [1, 2], 1: [3, 4]}, 2: {0: [5], 1: [6]}, 4: {0: [7], 1: [8]}}
    kernel = float64_kernel(
        9,
        deps,
        vertex_bias="all",
        share_lengthscales=share,
        share_outputscales=share,
        shared_component=True,
        batch_shape=batch_shape,
    )
    ls, os_ = kernel.group_lengthscale.clone(), kernel.group_outputscale.clone()
    offset = kernel.vertex_offset.clone()
    tau = kernel.slot_outputscale.clone()
    torch.manual_seed(0)
    sample_all_priors(kernel)
    assert kernel.group_lengthscale.shape == ls.shape
    assert kernel.group_outputscale.shape == os_.shape
    assert (kernel.group_lengthscale != ls).all()
    assert (kernel.group_outputscale != os_).all()
    assert kernel.vertex_offset.shape == offset.shape
    assert (kernel.vertex_offset != offset).all()
    assert kernel.slot_outputscale.shape == tau.shape
    assert (kernel.slot_outputscale != tau).all()
    if batch_shape:  # independent draws per batch member
        assert not torch.equal(kernel.group_lengthscale[0], kernel.group_lengthscale[1])


@pytest.mark.parametrize("shared_component", [False, True])
@pytest.mark.parametrize("vertex_bias", ["none", "all"])
def test_vertex_covariance_is_the_per_vertex_term(vertex_bias, shared_component):
    d, deps = random_tree(2, max_depth=2)
    kernel = float64_kernel(
        d, deps, vertex_bias=vertex_bias, shared_component=shared_component
    )
    randomize(kernel, 5)
    Z, X = random_points(d, deps, 3, 11), random_points(d, deps, 5, 12)
    kv = kernel.vertex_covariance(Z, X).detach()  # 3 x V x 5
    tree = kernel.tree
    active_x = tree.vertex_activity(X)
    active_z = tree.vertex_activity(Z)
    # Summing k_v over the vertices active at z gives k(z, x).
    full = (kv * active_z.unsqueeze(-1)).sum(-2)
    torch.testing.assert_close(full, kernel(Z, X).to_dense().detach())
    if shared_component:
        # A vertex covaries with points that have a vertex with parameters in
        # its slot (its own or a sibling), and with no others.
        slots = tree.vertex_slots
        has = kernel.vertex_has_params
        in_slot = (slots.unsqueeze(0) == slots.unsqueeze(1)) & has  # V x V
        reach = (active_x.double() @ in_slot.double().T) > 0  # n x V
        reach = (reach & has) | (active_x & kernel.vertex_contributes)
        assert (kv.abs() > 0).sum() > 0
        assert (kv.permute(1, 2, 0)[~reach.T] == 0).all()
        assert (kv[:, ~active_x.any(0) & has].abs() > 0).any()
    else:
        assert (kv[:, ~active_x.any(0)] == 0).all()
    # At z = x the per-vertex term is the vertex's prior variance.
    kxx = kernel.vertex_covariance(X, X).detach().diagonal(dim1=0, dim2=2).T
    prior = kernel.vertex_prior_variance().detach().expand_as(kxx)
    torch.testing.assert_close(kxx[active_x], prior[active_x])
    if not shared_component:
        assert (kxx[~active_x] == 0).all()


def test_bad_inputs_raise_named_errors():
    deps = {0: {0: [1], 1: [2]}}
    with pytest.raises(ValueError, match="base_kernel"):
        float64_kernel(3, deps, base_kernel="periodic")
    with pytest.raises(ValueError, match="vertex_bias"):
        float64_kernel(3, deps, vertex_bias="leaves")
    with pytest.raises(ValueError, match="shared_component"):
        float64_kernel(3, deps, shared_component="depth")
    with pytest.raises(AttributeError, match="shared_component"):
        float64_kernel(3, deps).slot_outputscale = 1.0
    with pytest.raises(ValueError, match="outside"):
        float64_kernel(3, {0: {0: [5]}})
    with pytest.raises(ValueError, match="child of both"):
        float64_kernel(3, {0: {0: [2]}, 1: {0: [2]}})
    with pytest.raises(ValueError, match="cycle"):
        TreeStructure(3, {0: {0: [1]}, 1: {0: [0]}})
    kernel = float64_kernel(3, deps)
    with pytest.raises(ValueError, match="3 columns"):
        kernel(torch.zeros(2, 4)).to_dense()
