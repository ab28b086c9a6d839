"""HPO-B's protocol on its conditional test tasks: discrete BO on each pool.

Every run starts from 5 random pool rows (the same for every method at a
seed), then chooses 100 more among the rows not yet evaluated (``--budget 105``,
the default). "At k" counts k trials after the 5 initial rows, as HPO-B does.
The score is HPO-B's normalized regret, ``1 - (y+ - min y) / (max y - min y)`` over the
pool, averaged over the 26 tasks (:data:`~benchmarks.problems.hpob.TEST_TASKS`)
and the seeds. Methods:

=============  ============================================================
``treebo``     the default loop, ``TreeOptimizer.ask(candidates=pool)`` (any
               preset of :mod:`benchmarks.methods.treebo` runs the same way)
``random``     the pool in a random order
``flat_gp``    BoTorch ``SingleTaskGP`` on HPO-B's flat features (inactive
               values imputed as 0 with ``.na`` flags, the encoding HPO-B's
               own GP baseline sees), LogEI over the pool
``addtree_logei`` the plain BoTorch loop on ``AddTreeGP`` (its defaults) over
               the tree encoding, LogEI over the pool, 10 initial rows
               (HPO-B's 5 and 5 random ones)
=============  ============================================================

Published means over the same 26 tasks (HPO-B's result files), at 25 / 50 /
100 trials: Random 0.0547 / 0.0410 / 0.0275; GP 0.0417 / 0.0306 / 0.0244; DGP
0.0646 / 0.0339 / 0.0192; BOHAMIANN 0.0574 / 0.0329 / 0.0133.

Usage (the ``hpob`` suite of :mod:`benchmarks.suites`)::

    python -m benchmarks.run hpob --methods treebo,random,flat_gp --seeds 0-4

``--lockstep`` runs every missing run at once with
:func:`treebo.loop.lockstep.run_in_lockstep` (the fits of runs on the same space
batched; the same rows as one by one): a record's ``wall_seconds`` is then the time
from the batch's start to the run's end, and ``lockstep_runs`` the batch's size.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo import TreeOptimizer
from treebo.add_tree import AddTreeGP
from treebo.optim.pool import optimize_acqf_pool

from .harness import stamp
from .methods.botorch_peers import PLAIN_LOOP_INITIAL
from .methods.treebo import PRESETS
from .problems.hpob import N_INITIAL, TEST_TASKS, HPOBTask, initial_rows

RECORDS = Path(__file__).parent / "records" / "hpob.jsonl"
PUBLISHED = {
    "Random": (0.0547, 0.0410, 0.0275),
    "GP": (0.0417, 0.0306, 0.0244),
    "DGP": (0.0646, 0.0339, 0.0192),
    "BOHAMIANN": (0.0574, 0.0329, 0.0133),
}


def run_treebo(task: HPOBTask, seed: int, budget: int, preset: str) -> list[int]:
    opt = TreeOptimizer(
        task.space,
        strategy=PRESETS[preset](),
        maximize=True,
        n_initial=N_INITIAL,
        seed=seed,
    )
    rows = initial_rows(task, seed)
    for i in rows:
        config = task.space.to_dict(task.pool[i])
        opt.tell(config, float(task.accuracy[i]))
    while len(rows) < budget:
        config = opt.ask(candidates=task.pool)
        rows.append(task.index_of(config))
        opt.tell(config, float(task.accuracy[rows[-1]]))
    return rows


def run_random(task: HPOBTask, seed: int, budget: int) -> list[int]:
    rows = initial_rows(task, seed)
    generator = torch.Generator().manual_seed(seed)
    rest = [i for i in torch.randperm(task.pool.shape[0], generator=generator).tolist()]
    taken = set(rows)
    rows += [i for i in rest if i not in taken][: budget - len(rows)]
    return rows


def run_pool_gp(
    task: HPOBTask,
    seed: int,
    budget: int,
    X_all: torch.Tensor,
    make_model: Callable[[torch.Tensor, torch.Tensor], SingleTaskGP],
    n_initial: int = N_INITIAL,
) -> list[int]:
    """The plain BoTorch loop on a pool: HPO-B's initial rows (topped up to
    ``n_initial`` with seeded random rows), then a fresh fit of
    ``make_model(X, y)`` and LogEI scored over every free row, per trial."""
    rows = initial_rows(task, seed)
    if n_initial > len(rows):
        generator = torch.Generator().manual_seed(20_000 + seed)
        order = torch.randperm(X_all.shape[0], generator=generator).tolist()
        rows += [i for i in order if i not in rows][: n_initial - len(rows)]
    y_all = task.accuracy.unsqueeze(-1)
    free = torch.ones(X_all.shape[0], dtype=torch.bool)
    free[rows] = False
    while len(rows) < budget:
        torch.manual_seed(seed * 1000 + len(rows))
        model = make_model(X_all[rows], y_all[rows])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        acqf = LogExpectedImprovement(model, best_f=y_all[rows].max())
        candidates = free.nonzero().squeeze(-1)
        index, _ = optimize_acqf_pool(acqf, X_all[candidates])
        rows.append(int(candidates[index]))
        free[rows[-1]] = False
    return rows


def run_flat_gp(task: HPOBTask, seed: int, budget: int) -> list[int]:
    X_all = torch.as_tensor(task.raw, dtype=torch.float64)
    return run_pool_gp(task, seed, budget, X_all, SingleTaskGP)


def run_addtree_logei(task: HPOBTask, seed: int, budget: int) -> list[int]:
    space = task.space

    def model(X: torch.Tensor, y: torch.Tensor) -> AddTreeGP:
        return AddTreeGP(
            X,
            y,
            space.tree,
            bounds=space.bounds,
            categorical_values=space.categorical_values,
        )

    return run_pool_gp(
        task, seed, budget, task.pool, model, n_initial=PLAIN_LOOP_INITIAL
    )


METHODS = {
    "random": run_random,
    "flat_gp": run_flat_gp,
    "addtree_logei": run_addtree_logei,
}


def run_method(task: HPOBTask, method: str, seed: int, budget: int) -> list[int]:
    """The pool rows ``method`` (a treebo preset or a control) evaluates."""
    if method in PRESETS:
        return run_treebo(task, seed, budget, method)
    if method not in METHODS:
        raise ValueError(f"method must be a treebo preset or one of {list(METHODS)}.")
    return METHODS[method](task, seed, budget)


@functools.cache
def task_of(problem_name: str) -> HPOBTask:
    """The task ``hpob_<space>_<dataset>``, loaded once per process."""
    prefix, space_id, dataset_id = problem_name.split("_")
    if prefix != "hpob" or (space_id, dataset_id) not in TEST_TASKS:
        raise ValueError(f"not an HPO-B test task: {problem_name!r}.")
    return HPOBTask(space_id, dataset_id)


def run(
    problem_name: str,
    method: str,
    seed: int,
    budget: int,
    checkpoint: Path | None = None,
) -> dict:
    """The record of one run of the task ``hpob_<space>_<dataset>``
    (``checkpoint`` is unused)."""
    del checkpoint
    return run_task(task_of(problem_name), method, seed, budget)


def run_task(task: HPOBTask, method: str, seed: int, budget: int) -> dict:
    """The record of one run: the pool rows chosen and their accuracies."""
    t0 = time.time()
    rows = run_method(task, method, seed, budget)
    if len(set(rows)) != len(rows):
        raise RuntimeError(f"{method} evaluated a configuration twice")
    record = {
        "problem": f"hpob_{task.space_id}_{task.dataset_id}",
        "method": method,
        "seed": seed,
        "budget": budget,
        "rows": rows,
        "values": [float(task.accuracy[i]) for i in rows],
        "pool_min": float(task.accuracy.min()),
        "pool_max": float(task.accuracy.max()),
    }
    record.update(stamp(time.time() - t0))
    return record


def normalized_regret(record: dict) -> np.ndarray:
    """HPO-B's normalized regret after each trial of a record."""
    best = np.maximum.accumulate(np.asarray(record["values"]))
    low, high = record["pool_min"], record["pool_max"]
    return 1.0 - (best - low) / (high - low)


def regret_after(record: dict, k: int) -> float:
    """The normalized regret after ``k`` trials beyond the initial rows (HPO-B's
    counting: the 5 initial rows are not trials), NaN if the run is shorter."""
    regret = normalized_regret(record)
    index = N_INITIAL + k - 1
    return float(regret[index]) if index < len(regret) else float("nan")


def table(records: list[dict], checkpoints=(25, 50, 100)) -> list[str]:
    """Mean normalized regret over tasks and seeds after k trials (HPO-B's counting:
    the initial rows are not counted; runs too short for k are left out), the runs
    above 0.05 at the last checkpoint, and the mean per space there, beside HPO-B's
    published means."""
    methods = sorted({r["method"] for r in records})
    spaces = sorted({r["problem"].split("_")[1] for r in records})
    header = "| method | seeds | " + " | ".join(f"at {c}" for c in checkpoints)
    last = checkpoints[-1]
    lines = [
        header
        + f" | above 0.05 at {last} | "
        + " | ".join(f"{s} at {last}" for s in spaces)
        + " |",
        "|---" * (3 + len(checkpoints) + len(spaces)) + "|",
    ]
    for method in methods:
        mine = [r for r in records if r["method"] == method]
        regret = np.array([[regret_after(r, c) for c in checkpoints] for r in mine])
        seeds = sorted({r["seed"] for r in mine})
        tasks = {r["problem"] for r in mine}
        at = [
            f"{np.nanmean(column):.4f}" if np.isfinite(column).any() else "-"
            for column in regret.T
        ]
        space_of = [r["problem"].split("_")[1] for r in mine]
        final = regret[:, -1]
        per_space = [
            f"{np.nanmean(final[[s == space for space in space_of]]):.4f}"
            if np.isfinite(final).any()
            else "-"
            for s in spaces
        ]
        reached = final[np.isfinite(final)]
        above = (
            f"{int((reached > 0.05).sum())} of {len(reached)}" if len(reached) else "-"
        )
        lines.append(
            f"| {method} ({len(tasks)} tasks) | {len(seeds)} | "
            + " | ".join([*at, above, *per_space])
            + " |"
        )
    for name, values in PUBLISHED.items():
        lines.append(
            f"| {name} (published) | 5 | "
            + " | ".join(f"{v:.4f}" for v in values)
            + " |"
            + " |" * (1 + len(spaces))
        )
    lines += ["", *lockstep_walls(records)]
    lines += ["", *paired_against(records, "random", checkpoints)]
    variants = paired_against(records, "treebo", checkpoints, exclude={"random"})
    return lines + (["", *variants] if variants else [])


def lockstep_walls(records: list[dict]) -> list[str]:
    """One line per batch of runs made with ``--lockstep`` (one process each): its
    runs, spaces and wall time (the last run's ``wall_seconds``), machine and date."""
    batches: dict[tuple, list[dict]] = {}
    for r in records:
        if r.get("lockstep_runs"):
            key = (r["method"], r["date"], r["machine"], r["lockstep_runs"])
            batches.setdefault(key, []).append(r)
    lines = []
    for (method, date, machine, size), runs in sorted(batches.items()):
        spaces = ", ".join(sorted({r["problem"].split("_")[1] for r in runs}))
        minutes = max(r["wall_seconds"] for r in runs) / 60
        lines.append(
            f"- `{method}` in lockstep, {len(runs)} of {size} runs (spaces {spaces}): "
            f"{minutes:.1f} min in one process ({machine}, {date})."
        )
    if not lines:
        return []
    return ["Wall time of the runs made in lockstep, one process per batch:", *lines]


def paired_against(
    records: list[dict],
    baseline: str,
    checkpoints=(25, 50, 100),
    exclude: frozenset[str] | set[str] = frozenset(),
) -> list[str]:
    """Each method against ``baseline`` on the (task, seed) pairs both ran:
    lower / higher normalized regret, two-sided Wilcoxon signed-rank p
    (methods in ``exclude`` left out)."""
    from scipy.stats import wilcoxon

    curves = {
        (r["problem"], r["seed"], r["method"]): [
            regret_after(r, c) for c in checkpoints
        ]
        for r in records
    }
    methods = sorted({m for _, _, m in curves} - {baseline} - set(exclude))
    if baseline not in {m for _, _, m in curves} or not methods:
        return []
    who = "random search" if baseline == "random" else f"`{baseline}`"
    lines = [
        f"Paired with {who} on the same tasks and seeds: lower / higher "
        "(Wilcoxon signed-rank p).",
        "",
        "| method | " + " | ".join(f"at {c}" for c in checkpoints) + " |",
        "|---|" + "---|" * len(checkpoints),
    ]
    for method in methods:
        pairs = [
            (curve, curves[(p, s, baseline)])
            for (p, s, m), curve in curves.items()
            if m == method and (p, s, baseline) in curves
        ]
        cells = []
        for i, _ in enumerate(checkpoints):
            diff = np.array([ours[i] - theirs[i] for ours, theirs in pairs])
            diff = diff[np.isfinite(diff)]
            if not len(diff):  # runs too short for this checkpoint
                cells.append("-")
                continue
            lower, higher = int((diff < 0).sum()), int((diff > 0).sum())
            p = wilcoxon(diff, zero_method="zsplit").pvalue if lower + higher else 1.0
            cells.append(f"{lower} / {higher} (p = {p:.2g})")
        lines.append(f"| {method} ({len(pairs)} pairs) | " + " | ".join(cells) + " |")
    return lines
