import pytest
import torch
from gpytorch.kernels import MaternKernel, ScaleKernel

from treebo.treed.kernel import TreedLeafKernel
from treebo.treed.partition import build_partition


@pytest.fixture
def kernel_and_data():
    gen = torch.Generator().manual_seed(0)
    X = torch.rand(40, 2, generator=gen, dtype=torch.float64)
    y = torch.where(X[:, 0] < 0.5, torch.sin(15 * X[:, 1]), X[:, 1])
    part = build_partition(X, y, min_leaf_size=6)
    kernel = TreedLeafKernel(part, dim=2).to(X)
    L = part.num_leaves
    with torch.no_grad():  # distinct hyper-parameters per leaf
        base = kernel.base_kernel
        base.outputscale = torch.linspace(0.5, 2.0, L, dtype=torch.float64)
        base.base_kernel.lengthscale = (
            torch.rand(L, 1, 2, generator=gen, dtype=torch.float64) + 0.1
        )
    return kernel, part, X


def _brute_force(kernel, part, A, B):
    """Block construction: leaf by leaf, pair by pair."""
    base = kernel.base_kernel
    K = torch.zeros(A.shape[0], B.shape[0], dtype=A.dtype)
    in_a, in_b = part.membership(A), part.membership(B)
    for leaf in range(part.num_leaves):
        ls = base.base_kernel.lengthscale[leaf, 0]
        scale = base.outputscale[leaf]
        single = MaternKernel(nu=2.5, ard_num_dims=A.shape[-1]).to(A)
        single.lengthscale = ls
        for i in range(A.shape[0]):
            for j in range(B.shape[0]):
                if in_a[i, leaf] and in_b[j, leaf]:
                    K[i, j] += (
                        scale * single(A[i : i + 1], B[j : j + 1]).to_dense()[0, 0]
                    )
    return K


def test_kernel_equals_the_block_construction(kernel_and_data):
    kernel, part, X = kernel_and_data
    Xq = torch.rand(7, 2, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(
            kernel(X[:12], Xq).to_dense(), _brute_force(kernel, part, X[:12], Xq)
        )
        # Training points on a threshold lie in two cells: two terms.
        K = kernel(X).to_dense()
        torch.testing.assert_close(K, _brute_force(kernel, part, X, X))
        both = part.leaf_members.sum(0) > 1
        assert bool(both.any())
        assert bool((K.diagonal()[both] > kernel.base_kernel.outputscale.min()).all())


def test_kernel_is_symmetric_psd_and_its_diagonal_matches(kernel_and_data):
    kernel, _, X = kernel_and_data
    with torch.no_grad():
        K = kernel(X).to_dense()
        torch.testing.assert_close(K, K.T)
        assert float(torch.linalg.eigvalsh(K).min()) > -1e-10
        torch.testing.assert_close(kernel(X, diag=True), K.diagonal())


def test_kernel_broadcasts_over_batch_dimensions(kernel_and_data):
    kernel, _, _ = kernel_and_data
    Xb = torch.rand(3, 4, 6, 2, dtype=torch.float64)
    with torch.no_grad():
        K = kernel(Xb).to_dense()
        assert K.shape == (3, 4, 6, 6)
        torch.testing.assert_close(K[2, 1], kernel(Xb[2, 1]).to_dense())
        assert kernel(Xb, diag=True).shape == (3, 4, 6)


def test_gradients_reach_every_leafs_hyperparameters(kernel_and_data):
    kernel, part, X = kernel_and_data
    kernel(X).to_dense().sum().backward()
    raw = kernel.base_kernel.raw_outputscale.grad
    assert raw.shape == (part.num_leaves,)
    assert bool((raw != 0).all())


def test_base_kernel_needs_one_batch_entry_per_leaf(kernel_and_data):
    _, part, _ = kernel_and_data
    wrong = ScaleKernel(MaternKernel(nu=2.5, batch_shape=torch.Size([1])))
    with pytest.raises(ValueError, match="batch shape"):
        TreedLeafKernel(part, base_kernel=wrong)
    with pytest.raises(ValueError, match="dim"):
        TreedLeafKernel(part)
