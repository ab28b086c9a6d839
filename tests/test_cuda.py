"""Device-following checks; run only where CUDA is available."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import random_points, random_tree
from treebo.kernels import AddTreeKernel
from treebo.test_functions import Jenatton

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@cuda
def test_kernel_on_cuda_equals_cpu():
    d, deps = random_tree(2)
    kernel = AddTreeKernel(d, deps)
    X = random_points(d, deps, 30, 0)
    K_cpu = kernel(X).to_dense().detach()
    K_gpu = kernel.cuda()(X.cuda()).to_dense().detach()
    assert K_gpu.device.type == "cuda"
    torch.testing.assert_close(K_gpu.cpu(), K_cpu)


@cuda
def test_loop_runs_on_cuda():
    from treebo import TreeOptimizer

    problem = Jenatton()
    opt = TreeOptimizer(problem.space, seed=0, n_initial=5, device="cuda")
    for _ in range(7):
        params = opt.ask()
        problem.space.validate(params)
        opt.tell(params, problem.objective(params))
    assert opt.last_model.train_inputs[0].device.type == "cuda"
    assert len(opt.history) == 7


@cuda
def test_treed_gp_on_cuda_equals_cpu():
    from treebo.models import TreedGP

    gen = torch.Generator().manual_seed(0)
    X = torch.rand(40, 2, generator=gen, dtype=torch.float64)
    Y = torch.where(X[:, :1] < 0.5, torch.sin(12 * X[:, 1:]), X[:, 1:])
    Xq = torch.rand(6, 1, 2, generator=gen, dtype=torch.float64)
    cpu = TreedGP(X, Y, warp=True)
    gpu = TreedGP(X.cuda(), Y.cuda(), warp=True)
    assert gpu.partition.members.device.type == "cuda"
    assert torch.equal(gpu.partition.feature.cpu(), cpu.partition.feature)
    with torch.no_grad():
        torch.testing.assert_close(
            gpu.pseudo_log_likelihood().cpu(), cpu.pseudo_log_likelihood()
        )
        a, b = gpu.posterior(Xq.cuda()), cpu.posterior(Xq)
        torch.testing.assert_close(a.mean.cpu(), b.mean)
        torch.testing.assert_close(a.variance.cpu(), b.variance)
