"""The suites: which problems, methods, seeds and budget each table measures.

``python -m benchmarks.run SUITE`` runs a suite's missing records into
``benchmarks/records/SUITE.jsonl`` (every suite, whatever its runner);
``python -m benchmarks.report`` turns the records into ``RESULTS.md``. Every
suite's problems are :class:`~benchmarks.problems.protocol.Problem` s.
"""

from __future__ import annotations

from dataclasses import dataclass

from .problems.grid import GRID_PROBLEMS
from .problems.hpob import TEST_TASKS
from .problems.real_tasks import ACCURACY_TASKS, REAL_TASKS


@dataclass(frozen=True)
class Suite:
    """A table of ``RESULTS.md`` and the runs behind it.

    Attributes:
        title: The table's heading.
        about: What the table measures (a sentence or two).
        problems: Problem names (:mod:`benchmarks.problems`).
        methods: Method names (:mod:`benchmarks.methods`), treebo's first.
        seeds: The seeds of the table.
        budget: Evaluations per run (``None``: each problem's own).
        checkpoints: The evaluation counts the table reports.
        runner: The module whose ``run(problem, method, seed, budget,
            checkpoint)`` makes a run's record (``benchmarks.harness``: any
            problem of :mod:`benchmarks.problems` with any method of
            :mod:`benchmarks.methods`).
        pairs: Further ``(method, peer)`` comparisons the table pairs seed by
            seed, beside the first method against each other one.
        own_section: Reported by a section of its own in :mod:`benchmarks.report`
            (HPO-B's normalized regret, the grids' profiles) instead of the
            regret table.
    """

    title: str
    about: str
    problems: tuple[str, ...]
    methods: tuple[str, ...]
    seeds: tuple[int, ...]
    budget: int | None
    checkpoints: tuple[int, ...]
    runner: str = "benchmarks.harness"
    pairs: tuple[tuple[str, str], ...] = ()
    own_section: bool = False


TEN = tuple(range(10))
SURROGATE_TASKS = tuple(f"hpobc_{space}_{dataset}" for space, dataset in TEST_TASKS)
#: The proxy's tasks: one or two per space, tuned on; the other 20 confirm.
#: The peers of the default on the continuous HPO-B suites.
SURROGATE_PEERS = (
    "addtree_logei",
    "hck_logei",
    "flat_logei",
    "optuna_tpe",
    "smac",
    "random",
)
SURROGATE_PROXY = (
    "hpobc_5527_31",
    "hpobc_5527_146065",
    "hpobc_5891_9980",
    "hpobc_5906_3918",
    "hpobc_5971_43",
    "hpobc_6767_9914",
)
SUITES: dict[str, Suite] = {
    "conditional": Suite(
        "Conditional spaces: P1(a), P1(b), P2",
        "Jenatton et al. as in the Add-Tree paper (P1(a)) and as in Ax (P1(b)), "
        "and the balanced depth-4 tree of 8 leaves (P2); log10 regret.",
        ("p1a", "p1b", "p2"),
        ("treebo", "hck_logei", "flat_logei", "optuna_tpe", "random"),
        TEN,
        50,
        (25, 50),
    ),
    "jenatton": Suite(
        "Jenatton et al.'s tree model and independent GPs (P1, paper 001's trees)",
        "Add-Tree (treebo's loop and the paper's UCB loop) against Jenatton et "
        "al.'s semi-parametric ``tree`` and ``tree-nonlinear`` models and "
        "independent GPs per leaf (each with LogEI per leaf, then the best "
        "leaf), on P1(a), paper 001's small balanced trees with shared "
        "variables entering linearly or quadratically and ``v_shared_curve`` "
        "(off-centre optima, curved shared effects); log10 regret. "
        "``jenatton_tree`` keeps the shared term of the higher evidence; "
        "``jenatton_tree_linear`` is the paper's ``tree`` (linear only).",
        (
            "p1a",
            "t_small_balanced_linear",
            "t_small_balanced_quadratic",
            "v_shared_curve",
        ),
        (
            "treebo",
            "treebo_ucb_paper",
            "jenatton_tree",
            "jenatton_tree_linear",
            "jenatton_tree_nonlinear",
            "independent",
            "random",
        ),
        TEN,
        60,
        (20, 40, 60),
        pairs=(
            ("treebo_ucb_paper", "jenatton_tree"),
            ("treebo_ucb_paper", "independent"),
            ("jenatton_tree_nonlinear", "jenatton_tree"),
            ("jenatton_tree", "jenatton_tree_linear"),
            ("jenatton_tree", "independent"),
        ),
    ),
    "validation": Suite(
        "Validation suite: other tree shapes",
        "Flags, kinks, noise, shared parameters, an unbalanced tree, moving "
        "optima and misleading branches "
        "(``benchmarks/problems/validation.py``); log10 regret of the "
        "noise-free value.",
        (
            "v_flags",
            "v_kinks",
            "v_noisy",
            "v_shared",
            "v_unbalanced",
            "v_offcentre",
            "v_shared_curve",
            "v_moving",
            "v_mislead",
            "v_mislead_2d",
        ),
        ("treebo", "flat_logei", "random"),
        TEN,
        50,
        (25, 50),
    ),
    "tuning": Suite(
        "Training recipes: flags, integers, categoricals",
        "Tuning-shaped spaces (``benchmarks/problems/tuning.py``); log10 regret.",
        ("recipe_a", "recipe_b"),
        ("treebo", "flat_alt", "optuna_tpe", "random"),
        TEN,
        50,
        (25, 50),
    ),
    "model_selection": Suite(
        "Model selection by cross-validation (P9, real data)",
        "Six scikit-learn model families with their hyper-parameters and a "
        "preprocessing choice, scored by 3-fold CV error on digits and "
        "breast_cancer; the best CV error so far (the optimum is unknown).",
        ("p9_digits", "p9_cancer"),
        ("treebo", "ax_default", "smac", "optuna_tpe", "flat_alt", "random"),
        TEN,
        60,
        (30, 60),
    ),
    "real_tasks": Suite(
        "Real tuning tasks (learners cross-validated on bundled data)",
        "Six scikit-learn learners with integer, categorical and conditional "
        "parameters (``benchmarks/problems/real_tasks.py``); the best "
        "cross-validated loss so far (the optimum is unknown).",
        tuple(REAL_TASKS),
        ("treebo", "random", "optuna_tpe", "smac", "flat_alt", "ax_default"),
        TEN,
        100,
        (25, 50, 100),
    ),
    "accuracy": Suite(
        "Learners scored by accuracy on modest validation sets (step-shaped)",
        "The classification tasks of the real-task suite scored by their error "
        "rate (hold-out quarter or 3-fold CV on 150 to 600 rows: steps of "
        "1/rows), and ``rt_svm_wine``; the best error so far.",
        ("rt_svm_wine", *ACCURACY_TASKS),
        (
            "treebo",
            "addtree_logei",
            "random",
            "optuna_tpe",
            "smac",
            "flat_logei",
            "hck_logei",
        ),
        TEN,
        100,
        (25, 50, 100),
    ),
    "noisy": Suite(
        "Noisy objectives: P1(a) and ridge regression with Gaussian noise",
        "Noise of 10 % of each problem's range over random points added to every "
        "evaluation (``benchmarks/problems/noisy.py``); regret of the best "
        "*observed* value, which noise flatters. What counts is the true value "
        "of the configuration each run recommends: the section on noise below.",
        ("p1a_noisy", "rt_ridge_noisy"),
        ("treebo", "treebo_deterministic", "random", "flat_logei"),
        TEN,
        50,
        (25, 50),
    ),
    "nonstationary": Suite(
        "Non-stationary functions: P6 RKHS, P7 2-D Exp",
        "The treed GP (HTBO) against stationary GPs; log10 regret.",
        ("rkhs", "exp2d"),
        ("treed", "treed_warp", "flat_logei", "flat_warp"),
        tuple(range(20)),
        50,
        (25, 50),
    ),
    "high_dim": Suite(
        "High-dimensional functions: P4, P5",
        "Additive functions over a graph (P4) and standard functions with "
        "known or no structure (P5), d = 10 to 250; the tree-additive GP "
        "against vanilla BoTorch and random search; log10 regret.",
        (
            "star10",
            "star25",
            "partition12",
            "grid3x3",
            "ancestry132",
            "hartmann6_20",
            "rosenbrock20",
            "styblinski250",
        ),
        ("tree_additive", "random_tree", "vanilla", "random"),
        TEN,
        300,
        (100, 300),
        runner="benchmarks.high_dim",
    ),
    "hpob": Suite(
        "HPO-B, conditional search spaces (26 test tasks)",
        "HPO-B's protocol on its SVM and XGBoost pools: 5 random initial rows, "
        "then 100 trials; normalized regret (:mod:`benchmarks.hpob`).",
        tuple(f"hpob_{space}_{dataset}" for space, dataset in TEST_TASKS),
        ("treebo", "random", "flat_gp", "addtree_logei"),
        tuple(range(5)),
        105,
        (25, 50, 100),
        runner="benchmarks.hpob",
        own_section=True,
    ),
    "hpob_continuous": Suite(
        "HPO-B in continuous mode: step-shaped surrogates (26 conditional test tasks)",
        "HPO-B's SVM and XGBoost test tasks as bocode's XGBoost surrogates over "
        "the continuous tree space (piecewise constant in every direction); "
        "HPO-B's 5 random pool rows, then 100 trials; the objective is the "
        "normalized regret against the surrogate's maximum over the space "
        "(:mod:`benchmarks.problems.hpob_surrogate`). Checkpoints count the "
        "initial rows: 30 / 55 / 105 are HPO-B's 25 / 50 / 100 trials.",
        SURROGATE_TASKS,
        ("treebo", *SURROGATE_PEERS),
        tuple(range(5)),
        105,
        (30, 55, 105),
        own_section=True,
    ),
    "hpob_continuous_proxy": Suite(
        "HPO-B in continuous mode, the fast proxy (6 tasks, 3 seeds, 50 trials)",
        "A fixed subset of ``hpob_continuous`` for iterating (one or two tasks "
        "per space; @30 / @55 are 25 / 50 trials after HPO-B's 5 rows); "
        "decisions are taken on the whole suite. treebo's runs went through "
        "``--lockstep``, the peers' one by one, side by side on the 2-core "
        "machine (``hck_logei``: 10 of the 18 runs); ``treebo_map_ei`` is the "
        "default before LogEI was integrated over the hyper-parameters; the "
        "variants tried are in docs/design.md.",
        SURROGATE_PROXY,
        ("treebo", "treebo_map_ei", *SURROGATE_PEERS),
        (0, 1, 2),
        55,
        (30, 55),
        own_section=True,
    ),
    "grid": Suite(
        "P8: Bayesian optimization over grids",
        "BKTF against GP-EI, GP-UCB on the same grid, treebo and random search; "
        "evaluations to the grid's optimum (:mod:`benchmarks.grid_bo`).",
        GRID_PROBLEMS,
        ("bktf", "gp_ei", "gp_ucb", "treebo", "random"),
        TEN,
        None,
        (),
        runner="benchmarks.grid_bo",
        own_section=True,
    ),
}
