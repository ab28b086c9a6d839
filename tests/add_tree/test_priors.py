import torch

from treebo.add_tree import LOOP_KERNEL_OPTIONS, AddTreeGP
from treebo.add_tree.priors import LogNormalPrior
from treebo.test_functions import Jenatton


def test_the_distribution_keeps_its_dtype_and_its_density():
    # It follows the module's device (tests/test_cuda.py) but not its dtype:
    # the density is the same wherever the model runs.
    loc, scale = torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.5])
    prior = LogNormalPrior(loc, scale)
    x = torch.tensor([0.7, 2.0], dtype=torch.float64)
    before = prior.log_prob(x)
    prior.to(torch.float64)
    assert prior.base_dist.loc.dtype == prior.base_dist.scale.dtype == torch.float32
    assert torch.equal(prior.log_prob(x), before)


def test_every_shaped_prior_of_an_add_tree_model_is_its_own_type():
    # The priors with one loc per hyper-parameter must move with the model (a
    # 0-dimensional one mixes with tensors on any device).
    problem = Jenatton()
    X = problem.space.sample(8, seed=0)
    kwargs = {**LOOP_KERNEL_OPTIONS.as_kwargs(), "ancestor_interactions": True}
    model = AddTreeGP(X, problem(X).unsqueeze(-1), problem.space.tree, **kwargs)
    shaped = [
        prior
        for _, _, prior, _, _ in model.named_priors()
        if getattr(getattr(prior, "base_dist", prior), "loc", torch.zeros(())).dim()
    ]
    assert len(shaped) >= 2  # the kernel's and the interaction terms' lengthscales
    assert all(isinstance(prior, LogNormalPrior) for prior in shaped)
