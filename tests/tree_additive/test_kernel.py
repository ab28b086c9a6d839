import pytest
import torch

from treebo.tree_additive import TreeAdditiveKernel
from treebo.tree_additive.kernel import _ComponentGram

EDGES = torch.tensor([[0, 1], [1, 2], [4, 3]])


def _kernel(d=6, edges=EDGES, batch_shape=(), seed=0):
    batch_shape = torch.Size(batch_shape)
    g = torch.Generator().manual_seed(seed)
    k = TreeAdditiveKernel(d, edges, batch_shape=batch_shape).double()
    k.scale = 0.1 + torch.rand(*batch_shape, d, generator=g, dtype=torch.float64)
    k.lengthscale = 0.2 + torch.rand(
        *batch_shape, 1, d, generator=g, dtype=torch.float64
    )
    return k


def _brute_force(k, x1, x2):
    ls, s = k.lengthscale.reshape(-1), k.scale.reshape(-1)
    components = [list(e) for e in k.edges.tolist()]
    components += [[i] for i in range(k.dim) if k.isolated[i]]
    K = torch.zeros(x1.shape[0], x2.shape[0], dtype=torch.float64)
    for i in range(x1.shape[0]):
        for j in range(x2.shape[0]):
            for c in components:
                r2 = (((x1[i, c] - x2[j, c]) / ls[c]) ** 2).sum()
                K[i, j] += (s[c] ** 2).sum().sqrt() * torch.exp(-0.5 * r2)
    return K


def test_the_kernel_equals_a_brute_force_sum_of_its_components():
    k = _kernel()
    g = torch.Generator().manual_seed(1)
    x1 = torch.rand(7, 6, generator=g, dtype=torch.float64)
    x2 = torch.rand(5, 6, generator=g, dtype=torch.float64)
    expected = _brute_force(k, x1, x2)
    assert torch.allclose(k(x1, x2).to_dense(), expected, atol=1e-13)
    assert torch.allclose(k.component_covariances(x1, x2).sum(-3), expected)
    diag = k(x1, x1, diag=True)
    assert torch.allclose(diag, _brute_force(k, x1, x1).diagonal())
    # Components: the three edges, then the isolated variable 5.
    assert k.num_components == 4
    assert k.isolated.tolist() == [False] * 5 + [True]


def test_the_gram_matrix_is_symmetric_and_positive_semidefinite():
    k = _kernel()
    g = torch.Generator().manual_seed(2)
    x = torch.rand(40, 6, generator=g, dtype=torch.float64)
    K = k(x).to_dense()
    assert torch.equal(K, K.T)
    assert torch.linalg.eigvalsh(K).min() > -1e-10


def test_gradients_of_the_chunked_gram_match_finite_differences():
    g = torch.Generator().manual_seed(3)
    A = torch.rand(2, 5, 6, generator=g, dtype=torch.float64, requires_grad=True)
    B = torch.rand(2, 5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    S = torch.rand(2, 4, generator=g, dtype=torch.float64, requires_grad=True)
    first, second = torch.tensor([0, 1, 4, 3]), torch.tensor([1, 2, 3])
    assert torch.autograd.gradcheck(
        lambda a, b, s: _ComponentGram.apply(a, b, s, first, second), (A, B, S)
    )


def test_chunked_and_recomputed_gradients_equal_the_kept_ones(monkeypatch):
    import treebo.tree_additive.kernel as module

    k = _kernel()
    x = torch.rand(
        9, 6, generator=torch.Generator().manual_seed(5), dtype=torch.float64
    ).double()

    def grads():
        k.zero_grad()
        k(x).to_dense().square().sum().backward()
        return k.raw_lengthscale.grad.clone(), k.raw_scale.grad.clone()

    kept = grads()
    monkeypatch.setattr(module, "_CHUNK_ELEMENTS", 81)  # one component a chunk
    monkeypatch.setattr(module, "_SAVED_ELEMENTS", 0)  # recompute
    for a, b in zip(kept, grads(), strict=True):
        assert torch.allclose(a, b, atol=1e-12)


def test_hyperparameter_gradients_match_finite_differences():
    k = _kernel()
    g = torch.Generator().manual_seed(4)
    x = torch.rand(6, 6, generator=g, dtype=torch.float64)
    weights = torch.randn(6, 6, generator=g, dtype=torch.float64)

    def loss():
        return (k(x).to_dense() * weights).sum()

    loss().backward()
    for param in (k.raw_lengthscale, k.raw_scale):
        flat = param.data.view(-1)
        for i in range(flat.numel()):
            h = 1e-6
            flat[i] += h
            up = float(loss())
            flat[i] -= 2 * h
            down = float(loss())
            flat[i] += h
            numeric = (up - down) / (2 * h)
            assert float(param.grad.view(-1)[i]) == pytest.approx(numeric, abs=1e-6)


def test_batch_shapes_broadcast():
    k = _kernel(batch_shape=torch.Size([3]))
    x = torch.rand(2, 3, 4, 6, dtype=torch.float64)
    K = k(x).to_dense()
    assert K.shape == (2, 3, 4, 4)
    single = TreeAdditiveKernel(6, EDGES).double()
    single.scale = k.scale[1]
    single.lengthscale = k.lengthscale[1]
    assert torch.allclose(K[1, 1], single(x[1, 1]).to_dense())


def test_set_edges_changes_the_structure_without_new_parameters():
    k = _kernel()
    before = {n: p for n, p in k.named_parameters()}
    values = {n: p.detach().clone() for n, p in before.items()}
    x = torch.rand(5, 6, dtype=torch.float64)
    K_before = k(x).to_dense()
    k.set_edges(torch.tensor([[2, 5]]))
    after = dict(k.named_parameters())
    assert after.keys() == before.keys()
    assert all(after[n] is before[n] for n in after)
    assert all(torch.equal(after[n], values[n]) for n in after)
    assert k.num_components == 5 and not torch.allclose(k(x).to_dense(), K_before)
    assert torch.allclose(k(x).to_dense(), _brute_force(k, x, x))


@pytest.mark.parametrize(
    "edges, message", [([[0, 1], [1, 2], [2, 0]], "cycle"), ([[0, 9]], r"\[0, 6\)")]
)
def test_non_forests_are_refused(edges, message):
    with pytest.raises(ValueError, match=message):
        TreeAdditiveKernel(6, torch.tensor(edges))


def test_fully_additive_when_no_edges():
    k = TreeAdditiveKernel(3)
    assert k.num_components == 3 and k.edges.shape == (0, 2)
    with pytest.raises(ValueError, match="dim"):
        TreeAdditiveKernel(0)


def test_initial_scales_respect_a_given_constraint():
    from gpytorch.constraints import GreaterThan, Interval

    k = TreeAdditiveKernel(10, scale_constraint=GreaterThan(0.5))
    assert (k.scale > 0.5).all() and k.scale.isfinite().all()
    k = TreeAdditiveKernel(10, scale_constraint=Interval(0.2, 0.4))
    assert torch.allclose(k.scale, torch.full((10,), 0.3))
    assert torch.allclose(TreeAdditiveKernel(10).scale, torch.full((10,), 0.1))
