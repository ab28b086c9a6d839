"""The ``treebo`` command line: run, resume, summarize and plot a run.

::

    treebo run my_module:objective --space space.yaml --budget 50 \\
        --checkpoint run.jsonl --seed 0 --workers 4
    treebo summary run.jsonl    # or: treebo show (the checkpoint holds the space)
    treebo plot run.jsonl --out run.png
    treebo demo

``run`` resumes from its checkpoint when the same command is given again (a larger
``--budget`` goes on). The objective is a ``module:function`` that takes a dict of
active parameters and returns a float; the space is a JSON/YAML file
([`treebo.space.spec`][treebo.space.spec]) or a ``module:attribute`` path.
``python -m treebo`` is the same command.

Exit status: 0 when done; 1 when every evaluation failed; 2 for a mistake in the
command (one line on stderr naming the file, key or setting); 130 when stopped
with Ctrl-C (the checkpoint keeps every finished evaluation: the same command
resumes). PyTorch is imported only by the commands that need it.

Example:
    >>> args = parser().parse_args(["summary", "run.jsonl", "--space", "s.yaml"])
    >>> args.command, args.checkpoint
    ('summary', 'run.jsonl')
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

from treebo import __version__


def strategy_names() -> list[str]:
    """The installed strategies' names, read from package metadata (the
    ``treebo.strategies`` entry points), so that ``--help`` does not import
    PyTorch."""
    from importlib.metadata import entry_points

    return sorted({e.name for e in entry_points(group="treebo.strategies")})


def _run(args: argparse.Namespace) -> int:
    from treebo.loop.run import minimize
    from treebo.space.spec import load_object, load_space

    space = load_space(args.space)
    objective = load_object(args.objective)
    if not callable(objective):
        print(f"treebo: {args.objective!r} is not callable.", file=sys.stderr)
        return 2
    try:
        result = minimize(
            objective,
            space,
            budget=args.budget,
            seed=args.seed,
            strategy=args.strategy,
            maximize=args.maximize,
            noise=args.noise,
            checkpoint=args.checkpoint,
            n_workers=args.workers,
            progress=False if args.no_progress else None,
        )
    except KeyboardInterrupt:
        print(f"\ntreebo: interrupted; {_kept(args, space)}", file=sys.stderr)
        return 130
    n = len(result.history)
    if result.best_params is None:
        print(
            f"treebo: all {n} evaluations failed (their errors are in the log"
            + (f" and in {args.checkpoint})." if args.checkpoint else ")."),
            file=sys.stderr,
        )
        return 1
    print(f"{n} evaluations")
    print(result.describe())
    return 0


def _kept(args: argparse.Namespace, space) -> str:
    """What an interrupted run keeps, and how to go on."""
    if args.checkpoint is None:
        return "nothing is kept (no --checkpoint)."
    from treebo.loop.checkpoint import read_checkpoint

    try:
        n = len(read_checkpoint(args.checkpoint, space).history)
    except (OSError, ValueError):
        n = 0
    return f"{n} evaluations are kept in {args.checkpoint}; the same command resumes."


def _noise(text: str) -> str | float:
    """``--noise``: a mode or a variance."""
    try:
        return float(text)
    except ValueError:
        return text


def _summary(args: argparse.Namespace) -> int:
    from treebo.loop.checkpoint import read_checkpoint
    from treebo.plot import path_label

    space = _checkpoint_space(args)
    result = read_checkpoint(args.checkpoint, space)
    failed = sum(t.value is None for t in result.history)
    print(f"{len(result.history)} evaluations ({failed} failed)")
    print(result.describe())
    for label, n in Counter(
        path_label(space, t.params) for t in result.history
    ).items():
        print(f"  {n:5d}  {label}")
    return 0


def _checkpoint_space(args: argparse.Namespace):
    """``--space`` where given, else the space the checkpoint holds."""
    from treebo.loop.checkpoint import checkpoint_space
    from treebo.space.spec import load_space

    if args.space is not None:
        return load_space(args.space)
    return checkpoint_space(args.checkpoint)


def _plot(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from treebo.loop.checkpoint import read_checkpoint
    from treebo.plot import (
        plot_best_so_far,
        plot_importances,
        plot_paths,
        plot_slice,
        plot_tree,
    )

    space = _checkpoint_space(args)
    result = read_checkpoint(args.checkpoint, space)
    fig = plt.figure(figsize=(12, 8))
    grid = fig.add_gridspec(2, 2)
    plot_best_so_far({"run": result}, log_y=args.log_y, ax=fig.add_subplot(grid[0, 0]))
    plot_paths(result, space, ax=fig.add_subplot(grid[0, 1]))
    plot_tree(result, space, ax=fig.add_subplot(grid[1, :]))
    fig.tight_layout()
    fig.savefig(args.out)
    written = [args.out]
    stem, suffix = os.path.splitext(args.out)
    plot_slice(result, space).savefig(f"{stem}_slice{suffix}")
    written.append(f"{stem}_slice{suffix}")
    try:
        plot_importances(result, space).savefig(f"{stem}_importances{suffix}")
        written.append(f"{stem}_importances{suffix}")
    except ValueError as err:  # fewer than 3 successes: no model to read
        print(f"treebo: no importance plot: {err}", file=sys.stderr)
    print("wrote " + ", ".join(written))
    return 0


def parser() -> argparse.ArgumentParser:
    """The argument parser of the ``treebo`` command."""
    top = argparse.ArgumentParser(prog="treebo", description=__doc__.splitlines()[0])
    top.add_argument("--version", action="version", version=f"treebo {__version__}")
    commands = top.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run (or resume) an optimization")
    run.add_argument(
        "objective",
        help="module:function taking a dict of parameters, returning a float",
    )
    run.add_argument(
        "--space", required=True, help="the space: file.json|yaml or module:attribute"
    )
    run.add_argument(
        "--budget",
        type=int,
        required=True,
        help="total evaluations (a resumed run counts its checkpoint's)",
    )
    run.add_argument("--seed", type=int, default=None, help="seed for a repeatable run")
    run.add_argument(
        "--strategy",
        "--model",  # its deprecated spelling
        dest="strategy",
        default="add_tree",
        metavar="NAME",
        help="what proposes the next configuration: "
        + ", ".join(strategy_names())
        + " (default: add_tree; --model is a deprecated alias)",
    )
    run.add_argument("--maximize", action="store_true", help="maximize the objective")
    run.add_argument(
        "--noise",
        type=_noise,
        default="infer",
        help="infer (default), deterministic, or the noise variance of every "
        "evaluation",
    )
    run.add_argument(
        "--checkpoint",
        default=None,
        help="journal file: every evaluation is appended; the same command resumes",
    )
    run.add_argument(
        "--workers", type=int, default=1, help="evaluations run at once (threads)"
    )
    run.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (the default shows one only on a terminal)",
    )
    run.set_defaults(handler=_run)
    for name, aliases, handler, text in (
        ("summary", ["show"], _summary, "print a checkpoint's best and paths"),
        (
            "plot",
            [],
            _plot,
            "plot a checkpoint's best value, paths and tree (OUT), a slice per "
            "parameter (OUT_slice) and the vertices' importances (OUT_importances)",
        ),
    ):
        sub = commands.add_parser(name, aliases=aliases, help=text)
        sub.add_argument("checkpoint", help="the run's checkpoint file")
        sub.add_argument(
            "--space",
            default=None,
            help="the run's space: file or module:attribute (default: the one the "
            "checkpoint holds)",
        )
        if name == "plot":
            sub.add_argument(
                "--out", default="treebo_run.png", help="image file to write"
            )
            sub.add_argument(
                "--log-y",
                action=argparse.BooleanOptionalAction,
                default=None,
                help="a log value axis (default: where the values are positive and "
                "span more than two decades)",
            )
        sub.set_defaults(handler=handler)
    # Listed for --help; main() hands its arguments to treebo.demo.
    commands.add_parser("demo", help="the Jenatton demo (its own --help)")
    return top


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    # As `python -m treebo` does: `module:function` may name a module in the
    # current folder (a console script does not put it on the path).
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    if argv and argv[0] == "demo":
        from treebo.demo import main as demo

        demo(argv[1:], prog="treebo demo")
        return 0
    args = parser().parse_args(argv)
    try:
        return args.handler(args)
    except (ValueError, OSError) as err:  # ConfigurationError too
        print(f"treebo: {err}", file=sys.stderr)
        return 2
    except RuntimeError as err:
        from treebo.loop.checkpoint import CheckpointInUseError

        if not isinstance(err, CheckpointInUseError):
            raise
        print(f"treebo: {err}", file=sys.stderr)
        return 2
