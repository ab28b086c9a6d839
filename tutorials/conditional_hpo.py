"""Tutorial: a conditional search space, BO with treebo, and BoTorch interop.

Run: ``python tutorials/conditional_hpo.py``

1. Define a space where a model family is chosen at the root, each family has
   its own hyper-parameters, and a learning rate is shared by all of them.
2. Minimize a (synthetic) validation loss with ``treebo.minimize``, with a
   checkpoint file so that an interrupted run resumes.
3. Fit the ``AddTreeGP`` on the history and read the per-vertex posterior:
   which branch does the model believe in, and how sure is it?
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import torch

from treebo import Choice, Real, TreeOptimizer, TreeSpace, Vertex, minimize

# 1. The space: the shared "lr" lives on the root vertex.
space = TreeSpace(
    Vertex(
        [Real("lr", 1e-4, 1e-1, log_scale=True)],
        [
            Choice(
                "model",
                {
                    "mlp": Vertex([Real("width", 16, 512, log_scale=True)]),
                    "boosting": Vertex(
                        [Real("depth", 1, 8)],
                        [Choice("loss", ["squared", "huber"])],
                    ),
                },
            )
        ],
    )
)
print(space)
print("paths:", space.paths())


def validation_loss(p: dict) -> float:
    """A synthetic loss: the shared lr matters on every branch."""
    lr_term = (math.log10(p["lr"]) + 2.5) ** 2
    if p["model"] == "mlp":
        return 0.30 + 0.1 * lr_term + 0.05 * (math.log2(p["width"]) - 7) ** 2
    huber = 0.02 if p["loss"] == "huber" else 0.0
    return 0.25 + 0.1 * lr_term + 0.01 * (p["depth"] - 5) ** 2 - huber


# 2. BO with a checkpoint.
with tempfile.TemporaryDirectory() as tmp:
    ckpt = Path(tmp) / "hpo.json"
    result = minimize(validation_loss, space, budget=25, seed=0, checkpoint=ckpt)
    print("best:", result.best_params, round(result.best_value, 5))
    print("evaluations in the checkpoint:", len(result.history))

# 3. The model behind it, and its per-vertex view (the model sees -loss: it
#    maximizes, so a larger vertex mean is a better branch).
opt = TreeOptimizer(space, seed=0)
for trial in result.history:
    opt.tell(trial.params, trial.value)
model = opt.strategy.fit(opt.observations())  # the fitted AddTreeGP
probe = space.sample(1, seed=1)  # any row: each vertex reads its own columns
post = model.vertex_posterior(probe)
for v in space.tree.vertices:
    names = [space.parameter_names[c] for c in v.continuous_columns]
    print(
        f"vertex {v.index} {names}: mean {post.mean[0, v.index].item():+.3f} "
        f"sd {post.variance[0, v.index].sqrt().item():.3f}"
    )
print("hierarchical_dependencies for BoTorch:", space.to_hierarchical_dependencies())
print("tensor of the best configuration:", space.to_tensor(result.best_params))
assert torch.isfinite(post.mean).all()
