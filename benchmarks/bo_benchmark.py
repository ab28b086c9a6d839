"""BO on tree-structured problems: treebo against BoTorch peers and random search.

Every method starts from the same tree-aware initial design for a given seed
(treebo's), then proposes one point at a time. Each finished run is appended as
one JSON line to ``--out`` and skipped when the script is run again, so a long
benchmark can be stopped and resumed.

Usage::

    python benchmarks/bo_benchmark.py --problems p1a,p1b,p2 \\
        --methods random,treebo_ucb,treebo_logei,hck_logei,flat_logei \\
        --seeds 0-9 --budget 100 --out benchmarks/out/bo.jsonl
    python benchmarks/summarize.py benchmarks/out/bo.jsonl

Methods:
    random        uniform per choice, then uniform values
    treebo        treebo's default loop, ``TreeOptimizer()`` (LogEI on
                  ``AddTreeGP`` with local refinement); the same settings are
                  spelled ``DEFAULT_METHOD`` (the base method plus modifiers)
    treebo_ucb    Add-Tree-GP-UCB in the paper's loop (Algorithm 2, path by
                  the sum of per-vertex optima, no redirects, no local patience)
    treebo_ucb_joint  the same, choosing the path by the whole-function UCB
    treebo_ucb_default  ``TreeOptimizer(model="add_tree_ucb")``'s loop
    treebo_logei  LogEI without vertex offsets
                  The four base methods above keep the first local steps
                  (LogEI only, local noise floor 1e-6, a constant local mean)
                  and no shared components; modifiers change that.
    Modifiers (suffixes, combined in any order: ``treebo_logei_loo_shared``):
    *_global      no local refinement (``AddTreeOptions(local=None)``)
    *_loo         leave-one-out fit (``fit_criterion="loo"``)
    *_shared, *_lsall, *_osall  lengthscales and/or output scales shared by
                  all vertices
    *_unshared, *_lsnone  lengthscales and output scales (or lengthscales
                  only) per vertex instead of per depth
    *_offsets     a learned constant per vertex (``vertex_bias="all"``)
    *_shc         shared components per depth
    *_matern      Matern-5/2 per-vertex kernels
    *_nf4, *_nf5  global noise floor 1e-4 / 1e-5
    *_lr1, *_lr2  local radius 0.01 / 0.02
    *_lucb, *_lalt  UCB local steps / UCB and LogEI alternating
    *_lnf8        local noise floor 1e-8
    *_lauto       local model on the global model's residuals (``mean="auto"``)
    *_lp2         a local step after two failed global proposals
    *_bp2, *_bp5, *_nored, *_redall  Add-Tree-GP-UCB's ``basin_patience``
                  (2, 5, none, 3)
    *_par2, *_par3, *_par4  as 2 / 3 / 4 parallel workers: that many
                  configurations asked for before their values are told
    hck_logei     BoTorch HierarchicalConditionalKernelGP + LogEI, optimize_acqf_mixed
    flat_logei    BoTorch SingleTaskGP on the flattened space + LogEI,
                  optimize_acqf_mixed
    flat_alt      the same with optimize_acqf_mixed_alternating
    flat_warp     SingleTaskGP with a Kumaraswamy input warp (BO-WARP)
    treed         ``TreeOptimizer(model="treed")`` (HTBO); suffixes ``_warp``
                  (HTBO-WARP), ``_d<k>`` (max_depth) and ``_m<k>``
                  (min_leaf_size), e.g. ``treed_warp_d2``
    smac, ax_default  SMAC3's HPO facade, Ax's default generation strategy
    optuna_tpe    Optuna TPESampler(multivariate=True, group=True), define-by-run

Modifiers of settings that were removed from the loop (``RETIRED_MODIFIERS``)
are refused; their records stay readable by ``summarize.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.hierarchical import HierarchicalConditionalKernelGP
from botorch.models.transforms.input import ChainedInputTransform, Normalize, Warp
from botorch.optim import optimize_acqf_mixed, optimize_acqf_mixed_alternating
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo import Categorical, Integer, TreeOptimizer, TreeSpace
from treebo.add_tree.kernel_options import AddTreeKernelOptions
from treebo.loop.design import default_initial_size
from treebo.loop.design import initial_design as treebo_initial_design
from treebo.strategies import AddTreeOptions, AddTreeUCBOptions, TreedOptions

if __package__:  # imported as benchmarks.bo_benchmark
    from .mixed_peers import discrete_values, run_ax, run_smac
    from .nonstationary_problems import NONSTATIONARY_PROBLEMS
    from .summarize import parse_seeds
    from .tuning_problems import TUNING_PROBLEMS
    from .validation_problems import VALIDATION_PROBLEMS
    from .winsorized import WinsorizedAddTreeStrategy  # noqa: F401 (registers it)
else:  # run as a script: benchmarks/ is on sys.path
    from mixed_peers import discrete_values, run_ax, run_smac
    from nonstationary_problems import NONSTATIONARY_PROBLEMS
    from summarize import parse_seeds
    from tuning_problems import TUNING_PROBLEMS
    from validation_problems import VALIDATION_PROBLEMS
    from winsorized import WinsorizedAddTreeStrategy  # noqa: F401 (registers it)
from treebo.test_functions import GeneralizedJenatton, Jenatton, ModelSelection

PROBLEMS = {
    "p1a": lambda: Jenatton("paper"),
    "p1b": lambda: Jenatton("ax"),
    "p2": lambda: GeneralizedJenatton(depth=4, balanced=True),
    **VALIDATION_PROBLEMS,
    **TUNING_PROBLEMS,
    **NONSTATIONARY_PROBLEMS,
    # P9: model selection by 3-fold CV error; the folds are fixed (seed 0) so
    # that every run optimizes the same function.
    "p9_digits": lambda: ModelSelection("digits", seed=0),
    "p9_cancer": lambda: ModelSelection("breast_cancer", seed=0),
}


def initial_design(space: TreeSpace, seed: int) -> list[dict]:
    """treebo's tree-aware initial design (shared by every method)."""
    return treebo_initial_design(space, default_initial_size(space), seed)


def fixed_features_per_path(space: TreeSpace) -> list[dict[int, float]]:
    """For optimize_acqf_mixed: each path's choices and inactive columns fixed."""
    out = []
    values = space.tree.path_choice_values
    active = space.tree.path_active_columns
    for p in range(space.num_paths):
        fixed = {}
        for c in range(space.dim):
            if not math.isnan(values[p, c]):
                fixed[c] = float(values[p, c])
            elif not active[p, c]:
                fixed[c] = float(space.canonical_values[c])
        out.append(fixed)
    return out


def botorch_proposal(
    kind: str, space: TreeSpace, X: torch.Tensor, y: torch.Tensor, seed: int
) -> torch.Tensor:
    """One proposal of a BoTorch peer (maximizing ``y``).

    The seed is set before the fit as well as before the acquisition
    optimization: when a fit fails, BoTorch retries from hyper-parameters
    sampled from their priors, and those draws should not depend on what ran
    earlier in the process.
    """
    torch.manual_seed(seed)
    bounds = space.bounds
    transform = Normalize(d=space.dim, bounds=bounds)
    if kind == "hck_logei":
        model = HierarchicalConditionalKernelGP(
            X, y, space.to_hierarchical_dependencies(), input_transform=transform
        )
    elif kind == "flat_warp":  # input warping (Snoek et al., 2014): BO-WARP
        indices = list(range(space.dim))
        warp = Warp(
            d=space.dim,
            indices=indices,
            bounds=torch.stack([torch.zeros(space.dim), torch.ones(space.dim)]).to(X),
        )
        chained = ChainedInputTransform(normalize=transform, warp=warp)
        model = SingleTaskGP(X, y, input_transform=chained)
    else:
        model = SingleTaskGP(X, y, input_transform=transform)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        acqf = LogExpectedImprovement(model, best_f=y.max())
        if kind == "flat_alt":  # no path listing: discrete steps
            discrete, categorical = discrete_values(space)
            cand, _ = optimize_acqf_mixed_alternating(
                acqf,
                bounds=bounds,
                discrete_dims=discrete or None,
                cat_dims=categorical or None,
                num_restarts=10,
                raw_samples=512,
            )
        else:
            cand, _ = optimize_acqf_mixed(
                acqf,
                bounds=bounds,
                q=1,
                num_restarts=10,
                raw_samples=512,
                fixed_features_list=fixed_features_per_path(space),
            )
    return space.canonicalize(cand.detach())


# Every method is a flat dict of settings (``SETTINGS`` names them), turned
# into a strategy's options by ``treebo_options``. The base methods pin the
# settings they were first measured with, so that old records stay valid:
# "treebo_ucb" / "treebo_ucb_joint" the paper's loop (no redirects, no local
# patience), "treebo_logei" the LogEI loop without vertex offsets, and every
# base method the first local steps (LogEI only, local noise floor 1e-6, a
# constant local mean), no shared components and no alternative kernel.
# ``treebo`` is the default loop, ``TreeOptimizer()``; ``DEFAULT_METHOD``
# spells it with modifiers.
_FIRST_LOCAL_STEPS = {
    "local_acquisition": ("log_ei",),
    "local_noise_floor": 1e-6,
    "shared_component": False,
    "local_mean": "constant",
    "select_interactions": False,
}
_UCB_PAPER_LOOP = {
    "model": "add_tree_ucb",
    "local_patience": 0,
    "basin_patience": None,
    **_FIRST_LOCAL_STEPS,
}
TREEBO_METHODS = {
    "treebo": {},
    "treebo_ucb": {**_UCB_PAPER_LOOP, "path_selection": "sum"},
    "treebo_ucb_joint": {**_UCB_PAPER_LOOP, "path_selection": "joint"},
    "treebo_ucb_default": {"model": "add_tree_ucb", **_FIRST_LOCAL_STEPS},
    "treebo_logei": {"vertex_bias": "none", **_FIRST_LOCAL_STEPS},
}
DEFAULT_METHOD = "treebo_logei_offsets_lucb_lnf8_lalt_shc_lauto_selint"
TREEBO_MODIFIERS = {
    "global": {"local_refinement": False},
    "loo": {"fit_criterion": "loo"},
    "shared": {"share_lengthscales": "all", "share_outputscales": "all"},
    "unshared": {"share_lengthscales": "none", "share_outputscales": "none"},
    "lsnone": {"share_lengthscales": "none"},
    "lsall": {"share_lengthscales": "all"},
    "osall": {"share_outputscales": "all"},
    "osnone": {"share_outputscales": "none"},
    "offsets": {"vertex_bias": "all"},
    "shc": {"shared_component": True},
    "inherit": {"inherit_ancestors": True},
    "interact": {"ancestor_interactions": True},
    # The method's kernel with and without interaction terms, chosen by
    # leave-one-out (the default of "treebo"); "noint": the kernel alone.
    "selint": {"select_interactions": True},
    "noint": {"select_interactions": False},
    # Also the method's kernel with a lengthscale vector per vertex (not per
    # depth) among the leave-one-out alternatives.
    "sells": {"select_unshared_lengthscales": True},
    # Scores clipped at Tukey's lower fence (benchmarks/winsorized.py).
    "wins": {"model": "add_tree_winsorized"},
    "lp2": {"local_patience": 2},
    "bp2": {"basin_patience": 2},
    "bp5": {"basin_patience": 5},
    "nored": {"basin_patience": None},
    "redall": {"basin_patience": 3},
    "lr1": {"local_radius": 0.01},
    "lr2": {"local_radius": 0.02},
    "nf4": {"noise_floor": 1e-4},
    "nf5": {"noise_floor": 1e-5},
    "lucb": {"local_acquisition": ("ucb",)},
    "lnf8": {"local_noise_floor": 1e-8},
    "lalt": {"local_acquisition": ("ucb", "log_ei")},
    "lauto": {"local_mean": "auto"},
    "matern": {"base_kernel": "matern52"},
    # Parallel workers: ask this many configurations, then tell their values.
    "par2": {"_batch": 2},
    "par3": {"_batch": 3},
    "par4": {"_batch": 4},
    # Initial design of this many points (default: paths + 1, 5 to 20).
    "init10": {"_n_initial": 10},
}
#: Modifiers of experiments whose settings were removed from the loop; their
#: records stay in ``benchmarks/out`` and their outcome in RESULTS_ARCHIVE.md.
RETIRED_MODIFIERS = (
    "shrink exploit mixed greedy greedymix red1 red3 bb6 bb10 alt2 alt3 lres lsel yj"
).split()

_KERNEL = set(AddTreeKernelOptions.names())
_LOCAL = {
    "local_radius": "radius",
    "local_noise_floor": "noise_floor",
    "local_acquisition": "acquisitions",
    "local_beta": "beta",
    "local_mean": "mean",
    "local_patience": "patience",
}


def build_options(settings: dict) -> tuple[str, object]:
    """``(model, options)`` of a flat settings dict (see ``TREEBO_METHODS``)."""
    settings = dict(settings)
    model = settings.pop("model", "add_tree")
    options_type = AddTreeUCBOptions if model == "add_tree_ucb" else AddTreeOptions
    base = options_type()
    kernel = {k: settings.pop(k) for k in list(settings) if k in _KERNEL}
    local = {_LOCAL[k]: settings.pop(k) for k in list(settings) if k in _LOCAL}
    refine = settings.pop("local_refinement", True)
    if "select_interactions" in settings:
        # None: the method's kernel with interaction terms, as by default.
        select = settings.pop("select_interactions")
        settings["alternative_kernels"] = None if select else ()
    # Experiment: also offer the kernel with a lengthscale vector per vertex.
    select_unshared = settings.pop("select_unshared_lengthscales", False)
    local_options = (
        replace(base.local, **local) if refine and base.local is not None else None
    )
    kernel_options = replace(base.kernel, **kernel)
    options = replace(base, kernel=kernel_options, local=local_options, **settings)
    if select_unshared:
        unshared = replace(kernel_options, share_lengthscales="none")
        options = replace(
            options, alternative_kernels=(*options.alternatives(), unshared)
        )
    return model, options


def treed_options(method: str) -> dict | None:
    """``TreeOptimizer`` keyword arguments of a treed method: ``treed`` plus
    suffixes ``warp`` (HTBO-WARP), ``noprune`` (paper 003's unpruned tree),
    ``d<k>`` (``max_depth=k``) and ``m<k>`` (``min_leaf_size=k``), e.g.
    ``treed_warp_d2``; ``None`` for another."""
    if method != "treed" and not method.startswith("treed_"):
        return None
    settings: dict = {}
    for part in method.split("_")[1:]:
        if part == "warp":
            settings["warp"] = True
        elif part == "noprune":
            settings["prune"] = False
        elif part[:1] in ("d", "m") and part[1:].isdigit():
            key = "max_depth" if part[0] == "d" else "min_leaf_size"
            settings[key] = int(part[1:])
        else:
            raise ValueError(f"unknown modifier {part!r} in method {method!r}")
    return {"model": "treed", "options": TreedOptions(**settings), "_batch": 1}


def treebo_options(method: str) -> dict | None:
    """``TreeOptimizer`` keyword arguments (``model``, ``options``) of a treebo
    method, plus ``_batch`` (workers); ``None`` for a peer.

    A method is a base name from ``TREEBO_METHODS`` followed by any of the
    ``TREEBO_MODIFIERS`` suffixes, e.g. ``treebo_logei_loo_shared``.
    """
    for base in sorted(TREEBO_METHODS, key=len, reverse=True):
        if method == base or method.startswith(base + "_"):
            settings = dict(TREEBO_METHODS[base])
            rest = method[len(base) :].split("_")[1:]
            if rest and rest[0] in ("joint", "default", "logei", "ucb"):
                continue  # a longer base name
            for name in rest:
                if name in RETIRED_MODIFIERS:
                    raise ValueError(
                        f"modifier {name!r} of method {method!r} was retired with "
                        "its setting (see benchmarks/RESULTS_ARCHIVE.md)."
                    )
                if name not in TREEBO_MODIFIERS:
                    raise ValueError(f"unknown modifier {name!r} in method {method!r}")
                settings.update(TREEBO_MODIFIERS[name])
            batch = settings.pop("_batch", 1)
            n_initial = settings.pop("_n_initial", None)
            model, options = build_options(settings)
            kwargs = {"model": model, "options": options, "_batch": batch}
            return kwargs if n_initial is None else {**kwargs, "n_initial": n_initial}
    return None


def _peer_state_path(checkpoint: Path, problem: str, method: str, seed: int) -> Path:
    return checkpoint / f"{problem}_{method}_{seed}.json"


def _load_peer_state(
    checkpoint: Path | None, problem: str, method: str, seed: int
) -> dict | None:
    """A BoTorch peer's evaluations so far (``None`` without a checkpoint)."""
    if checkpoint is None:
        return None
    path = _peer_state_path(checkpoint, problem, method, seed)
    if not path.exists():
        return None
    state = json.loads(path.read_text())
    key = (state["problem"], state["method"], state["seed"])
    if key != (problem, method, seed) or len(state["X"]) != len(state["values"]):
        raise ValueError(f"checkpoint {path} does not hold {problem} {method} {seed}.")
    return state


def _save_peer_state(
    checkpoint: Path,
    problem: str,
    method: str,
    seed: int,
    X: torch.Tensor,
    values: list[float],
    proposal_seconds: list[float],
) -> None:
    """Write a BoTorch peer's evaluations so far, atomically (temp file + rename)."""
    checkpoint.mkdir(parents=True, exist_ok=True)
    path = _peer_state_path(checkpoint, problem, method, seed)
    state = {
        "problem": problem,
        "method": method,
        "seed": seed,
        "X": X.tolist(),
        "values": values,
        "proposal_seconds": proposal_seconds,
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(path)


def run(
    problem_name: str,
    method: str,
    seed: int,
    budget: int,
    checkpoint: Path | None = None,
) -> dict:
    """One BO run of ``method`` on ``problem_name`` with ``budget`` evaluations.

    With ``checkpoint`` (a folder), the BoTorch peers (``hck_logei``,
    ``flat_logei``, minutes to hours per run) write their points and values
    after every evaluation and resume from there: a killed run loses at most
    the proposal in progress, and a finished run can be extended to a larger
    budget. treebo's methods and the others run in seconds to minutes and
    start over.
    """
    problem = PROBLEMS[problem_name]()
    if hasattr(problem, "reseed"):  # a noisy validation problem
        problem.reseed(seed)
    evaluated: list[dict] = []
    objective = problem.objective

    def recorded(params: dict) -> float:
        evaluated.append(dict(params))
        return objective(params)

    problem.objective = recorded
    space = problem.space
    design = initial_design(space, seed)
    values: list[float] = []
    proposal_seconds: list[float] = []
    options = treebo_options(method) or treed_options(method)
    if options is not None:
        batch = options.pop("_batch")
        opt = TreeOptimizer(space, seed=seed, **options)
        while len(values) < budget:
            asked = []
            for _ in range(min(batch, budget - len(values))):
                t0 = time.perf_counter()
                asked.append(opt.ask())
                if opt.history and len(opt.history) >= opt.n_initial:
                    proposal_seconds.append(time.perf_counter() - t0)
            for params in asked:
                v = problem.objective(params)
                opt.tell(params, v)
                values.append(v)
    elif method == "random":
        configs = design + space.to_dicts(space.sample(budget, seed=10_000 + seed))
        values = [problem.objective(c) for c in configs[:budget]]
    elif method in ("hck_logei", "flat_logei", "flat_alt", "flat_warp"):
        state = _load_peer_state(checkpoint, problem_name, method, seed)
        if state is None:
            X = space.to_tensor(design)
            values = [problem.objective(c) for c in design]
        else:
            n = min(len(state["values"]), budget)
            X = torch.tensor(state["X"][:n], dtype=torch.float64)
            values = list(state["values"][:n])
            proposal_seconds = state["proposal_seconds"][: n - len(design)]
        while len(values) < budget:
            y = -torch.tensor(values, dtype=torch.float64).unsqueeze(-1)
            t0 = time.perf_counter()
            x = botorch_proposal(method, space, X, y, seed * 1000 + len(values))
            proposal_seconds.append(time.perf_counter() - t0)
            X = torch.cat([X, x])
            values.append(problem.objective(space.to_dict(x[0])))
            if checkpoint is not None:
                _save_peer_state(
                    checkpoint, problem_name, method, seed, X, values, proposal_seconds
                )
    elif method == "optuna_tpe":
        values = run_optuna(problem, design, seed, budget)
    elif method == "smac":
        values = run_smac(problem, seed, budget)
    elif method == "ax_default":
        values = run_ax(problem, seed, budget)
    else:
        raise ValueError(f"unknown method {method!r}")
    record = {
        "problem": problem_name,
        "method": method,
        "seed": seed,
        "budget": budget,
        "optimal_value": problem.optimal_value,
        "values": values,
        "proposal_seconds": proposal_seconds,
    }
    if hasattr(problem, "true_value") and len(evaluated) == len(values):
        # Validation problems: noise-free values and the root choice's label.
        record["true_values"] = [problem.true_value(c) for c in evaluated]
        record["branches"] = [c[problem.root_choice] for c in evaluated]
        record["best_branch"] = problem.best_branch
    return record


def run_optuna(problem, design: list[dict], seed: int, budget: int) -> list[float]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = problem.space

    def suggest(trial, vertex) -> dict:
        params = {}
        for p in vertex.params:
            if isinstance(p, Integer):
                value = trial.suggest_int(p.name, p.low, p.high, log=p.log_scale)
            elif isinstance(p, Categorical):
                value = trial.suggest_categorical(p.name, p.labels)
            else:
                value = trial.suggest_float(p.name, p.lower, p.upper, log=p.log_scale)
            params[p.name] = value
        for ch in vertex.choices:
            label = trial.suggest_categorical(ch.name, ch.labels)
            params[ch.name] = label
            params.update(suggest(trial, ch.options[label]))
        return params

    sampler = optuna.samplers.TPESampler(
        multivariate=True, group=True, seed=seed, n_startup_trials=len(design)
    )
    study = optuna.create_study(sampler=sampler)
    for config in design:
        study.enqueue_trial(config)
    values = []
    for _ in range(budget):
        trial = study.ask()
        params = suggest(trial, space.root)
        v = problem.objective(params)
        study.tell(trial, v)
        values.append(v)
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="p1a,p1b,p2")
    parser.add_argument(
        "--methods", default="random,treebo_ucb,treebo_logei,hck_logei,flat_logei"
    )
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/out/bo.jsonl")
    parser.add_argument(
        "--checkpoint",
        default=None,
        help="folder for the BoTorch peers' per-evaluation checkpoints",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    checkpoint = Path(args.checkpoint) if args.checkpoint else None
    run_missing(
        Path(args.out),
        args.problems.split(","),
        args.methods.split(","),
        sorted(parse_seeds(args.seeds)),
        args.budget,
        lambda problem, method, seed, budget: run(
            problem, method, seed, budget, checkpoint
        ),
    )


def run_missing(
    out: Path,
    problems: list[str],
    methods: list[str],
    seeds: list[int],
    budget: int,
    run_one: Callable[[str, str, int, int], dict],
) -> None:
    """Run every (seed, problem, method) not yet in ``out`` and append its record.

    ``run_one(problem, method, seed, budget)`` returns the record; the wall
    time, machine and date are added here. Finished runs are skipped, so a
    benchmark can be stopped and resumed.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["problem"], r["method"], r["seed"], r["budget"]))
    for seed in seeds:
        for problem in problems:
            for method in methods:
                if (problem, method, seed, budget) in done:
                    continue
                t0 = time.time()
                record = run_one(problem, method, seed, budget)
                record["wall_seconds"] = time.time() - t0
                record["machine"] = f"{platform.machine()} {torch.get_num_threads()}t"
                record["date"] = time.strftime("%Y-%m-%d")
                with open(out, "a") as fh:
                    fh.write(json.dumps(record) + "\n")
                best = min(record["values"]) - (record["optimal_value"] or 0.0)
                print(
                    f"{problem} {method} seed={seed} best-f*={best:.3e} "
                    f"{record['wall_seconds']:.0f}s",
                    flush=True,
                )


if __name__ == "__main__":
    main()
