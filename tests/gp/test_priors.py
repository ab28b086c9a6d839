import torch

from treebo.add_tree import LOOP_KERNEL_OPTIONS, AddTreeGP
from treebo.gp.priors import LogNormalPrior
from treebo.test_functions import Jenatton


def test_the_distribution_follows_to_and_keeps_its_density():
    prior = LogNormalPrior(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.5]))
    x = torch.tensor([0.7, 2.0])
    before = prior.log_prob(x)
    prior.to(torch.float32)
    assert prior.base_dist.loc.dtype == prior.base_dist.scale.dtype == torch.float32
    torch.testing.assert_close(prior.log_prob(x.float()), before.float())


def test_every_prior_of_an_add_tree_model_follows_the_model():
    # A prior with one loc per hyper-parameter must move with the model (a
    # 0-dimensional one mixes with any device and dtype).
    problem = Jenatton()
    X = problem.space.sample(8, seed=0)
    kwargs = {**LOOP_KERNEL_OPTIONS.as_kwargs(), "ancestor_interactions": True}
    model = AddTreeGP(X, problem(X).unsqueeze(-1), problem.space.tree, **kwargs)
    model = model.to(torch.float32)
    shaped = 0
    for _, module, prior, closure, _ in model.named_priors():
        loc = getattr(getattr(prior, "base_dist", prior), "loc", None)
        if loc is not None and loc.dim() > 0:
            shaped += 1
            assert loc.dtype == torch.float32
            assert prior.log_prob(closure(module)).dtype == torch.float32
    assert shaped >= 2  # the kernel's and the interaction terms' lengthscales
