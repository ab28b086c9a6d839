"""Device-following checks; run only where CUDA is available."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import random_points, random_tree
from treebo.add_tree import AddTreeKernel
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
@pytest.mark.parametrize("strategy", ["add_tree", "add_tree_ucb"])
def test_loop_runs_on_cuda(strategy):
    from treebo import TreeOptimizer
    from treebo.add_tree import AddTreeStrategy, AddTreeUCBStrategy

    problem = Jenatton()
    cls = AddTreeStrategy if strategy == "add_tree" else AddTreeUCBStrategy
    opt = TreeOptimizer(problem.space, seed=0, n_initial=5, strategy=cls(device="cuda"))
    for _ in range(7):
        params = opt.ask()
        problem.space.validate(params)
        opt.tell(params, problem.objective(params))
    assert opt.last_model.train_inputs[0].device.type == "cuda"
    assert len(opt.history) == 7


@cuda
def test_a_model_shares_the_spaces_structure_on_cuda():
    from treebo.add_tree import AddTreeGP

    problem = Jenatton()
    X = problem.space.sample(12, seed=0)
    Y = problem(X).unsqueeze(-1)
    cpu = AddTreeGP(X, Y, problem.space.tree).eval()
    gpu = AddTreeGP(X.cuda(), Y.cuda(), problem.space.tree).cuda().eval()
    assert gpu.covar_module.tree is problem.space.tree is cpu.covar_module.tree
    Xq = problem.space.sample(5, seed=1)
    with torch.no_grad():
        a, b = gpu.posterior(Xq.cuda()), cpu.posterior(Xq)
    torch.testing.assert_close(a.mean.cpu(), b.mean)
    torch.testing.assert_close(a.variance.cpu(), b.variance)


@cuda
@pytest.mark.parametrize("model", ["tree_additive", "treed"])
def test_real_space_strategies_run_on_cuda(model):
    from treebo import Real, TreeOptimizer, TreeSpace, Vertex
    from treebo.strategies import make_strategy

    space = TreeSpace(Vertex([Real(f"x{i}", 0.0, 1.0) for i in range(3)]))
    strategy = type(make_strategy(model))(device="cuda")
    opt = TreeOptimizer(space, seed=0, n_initial=6, strategy=strategy)
    for _ in range(9):
        params = opt.ask()
        opt.tell(params, sum((v - 0.3) ** 2 for v in params.values()))
    assert [t.kind for t in opt.history][6:] == ["bo"] * 3
    assert opt.strategy.last_model.train_inputs[0].device.type == "cuda"


@cuda
def test_treed_gp_on_cuda_equals_cpu():
    from treebo.treed import TreedGP

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


@cuda
def test_tree_additive_family_on_cuda_equals_cpu():
    from treebo.tree_additive import (
        TreeAdditiveGP,
        TreeAdditiveUCB,
        learn_tree_structure,
        optimize_acqf_zooming,
    )

    g = torch.Generator().manual_seed(0)
    X = torch.rand(40, 6, generator=g, dtype=torch.float64)
    Y = torch.sin(4 * X[:, :1] * X[:, 1:2]) + X[:, 2:].sum(-1, keepdim=True)
    edges = torch.tensor([[0, 1], [2, 3]])
    results = {}
    for device in ("cpu", "cuda"):
        model = TreeAdditiveGP(X.to(device), Y.to(device), edges=edges).eval()
        Q = X[:5].to(device)
        post = model.component_posterior(Q)
        learned = learn_tree_structure(model, num_samples=64, seed=0)
        acqf = TreeAdditiveUCB(model, beta=1.0)
        bounds = torch.tensor([[0.0] * 6, [1.0] * 6], dtype=torch.float64)
        x, value = optimize_acqf_zooming(acqf, bounds.to(device), seed=0)
        assert x.device.type == device
        results[device] = (post.mean.detach().cpu(), learned, x.cpu(), value.cpu())
    cpu, gpu = results["cpu"], results["cuda"]
    torch.testing.assert_close(gpu[0], cpu[0])
    assert torch.equal(gpu[1], cpu[1])
    torch.testing.assert_close(gpu[2], cpu[2])
    torch.testing.assert_close(gpu[3], cpu[3])


@cuda
def test_bktf_on_cuda_equals_cpu_and_runs_in_the_loop():
    from treebo import TreeOptimizer
    from treebo.bktf import BKTFOptions, BKTFStrategy, SampleUCB, maximize_over_grid
    from treebo.bktf.conditionals import BKTFData, BKTFPrior, sample_mode_factors
    from treebo.bktf.grid import Grid
    from treebo.bktf.sampler import initial_state
    from treebo.space import Real, TreeSpace, Vertex

    gen = torch.Generator().manual_seed(0)
    grid = Grid([torch.linspace(0, 1, s, dtype=torch.float64) for s in (6, 5, 4)])
    index = torch.stack(
        [torch.randint(0, s, (10,), generator=gen) for s in grid.sizes], -1
    )
    y = torch.randn(10, generator=gen, dtype=torch.float64)
    torch.manual_seed(0)
    cpu = BKTFData(grid, index, y)
    state = initial_state(cpu, rank=2, chains=3, prior=BKTFPrior())
    gpu = BKTFData(grid, index.cuda(), y.cuda())
    state_gpu = type(state)(
        [f.cuda() for f in state.factors],
        state.log_lengthscale.cuda(),
        state.weights.cuda(),
        state.precision.cuda(),
    )
    z = torch.randn(3, 2, 5, dtype=torch.float64)
    eps = torch.randn(3, 10, dtype=torch.float64)
    expected = sample_mode_factors(state, cpu, 1, z, eps)
    got = sample_mode_factors(state_gpu, gpu, 1, z.cuda(), eps.cuda())
    assert got.device.type == "cuda"
    torch.testing.assert_close(got.cpu(), expected)

    space = TreeSpace(Vertex([Real("a", 0, 1), Real("b", 0, 1)]))
    options = BKTFOptions(resolution=8, num_sweeps=20, burn_in=10)
    opt = TreeOptimizer(
        space, seed=0, n_initial=3, strategy=BKTFStrategy(options, device="cuda")
    )
    for _ in range(5):
        params = opt.ask()
        opt.tell(params, (params["a"] - 0.3) ** 2 + params["b"])
    model = opt.strategy.last_model
    assert model.fitted_samples.weights.device.type == "cuda"
    flat, _ = maximize_over_grid(model.fitted_samples, model.grid, SampleUCB(), 0.0)
    assert 0 <= flat < model.grid.numel


@cuda
def test_block_likelihood_on_cuda_equals_cpu():
    from gpytorch.mlls import ExactMarginalLogLikelihood

    from treebo.add_tree import AddTreeGP
    from treebo.gp.exact_mll import CholeskyMarginalLogLikelihood

    deps = {0: {0: [1, 2], 1: [3, 4], 2: [5]}}
    g = torch.Generator().manual_seed(0)
    X = torch.rand(40, 6, generator=g, dtype=torch.float64)
    X[:, 0] = torch.randint(0, 3, (40,), generator=g).to(X)
    Y = torch.sin(4 * X).sum(-1, keepdim=True)
    values = []
    for device in ("cpu", "cuda"):
        model = AddTreeGP(X.to(device), Y.to(device), deps).to(device)
        model.train()
        assert model.covariance_blocks() is not None
        for mll_class in (CholeskyMarginalLogLikelihood, ExactMarginalLogLikelihood):
            mll = mll_class(model.likelihood, model)
            inputs = [model.transform_inputs(x) for x in model.train_inputs]
            out = model(*model.train_inputs)
            values.append(float(mll(out, model.train_targets, *inputs).detach()))
    assert max(values) - min(values) < 1e-8


@cuda
def test_runs_in_lockstep_on_cuda_equal_the_runs_one_by_one():
    from treebo import TreeOptimizer
    from treebo.add_tree import AddTreeStrategy
    from treebo.loop.lockstep import Lockstep

    problem = Jenatton()

    def run(seed: int) -> list[float]:
        strategy = AddTreeStrategy(device="cuda")
        opt = TreeOptimizer(problem.space, seed=seed, n_initial=4, strategy=strategy)
        values = []
        for _ in range(8):
            params = opt.ask()
            values.append(problem.objective(params))
            opt.tell(params, values[-1])
        return values

    state = torch.get_rng_state()
    alone = []
    for seed in range(3):
        torch.set_rng_state(state)
        alone.append(run(seed))
    torch.set_rng_state(state)
    lockstep = Lockstep([lambda s=s: run(s) for s in range(3)])
    outcomes = lockstep.run()
    assert [error for _, error in outcomes] == [None] * 3
    assert lockstep.evaluations > 0
    torch.testing.assert_close(
        torch.tensor([values for values, _ in outcomes]),
        torch.tensor(alone),
        rtol=1e-6,
        atol=1e-8,
    )
