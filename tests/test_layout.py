"""The package's layout: layers, import graph, module sizes, option counts, and
the public names the docs list (and the BoTorch-style paths users rely on)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import treebo
from treebo.strategies.base import strategy_entry_points

ROOT = Path(__file__).resolve().parents[1]

#: The model families: the packages of treebo's own strategy entry points.
FAMILIES = sorted(
    {
        e.value.partition(":")[0].rsplit(".", 1)[0]
        for e in strategy_entry_points()
        if e.value.startswith("treebo.")
    }
)
#: Layers, lowest first: a module imports only from its own layer or below (the
#: families on layer 2).
LAYERS = {
    "treebo._exports": 0,
    "treebo.space": 0,
    "treebo.gp": 1,
    "treebo.optim": 1,
    "treebo.strategies": 1,
    **dict.fromkeys(FAMILIES, 2),
    "treebo.loop": 3,
    "treebo.integrations": 3,
    "treebo.test_functions": 3,
    "treebo": 4,
}
MODULES = sorted(m.name for m in pkgutil.walk_packages(treebo.__path__, "treebo.")) + [
    "treebo"
]


def layer_of(module: str) -> tuple[str, int]:
    prefix = max(
        (p for p in LAYERS if module == p or module.startswith(p + ".")), key=len
    )
    return prefix, LAYERS[prefix]


def source_of(module: str) -> Path:
    return Path(importlib.util.find_spec(module).origin)


def is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def imports_of(module: str) -> set[str]:
    """The treebo modules ``module`` imports when it runs (``TYPE_CHECKING``
    blocks excluded; ``from package import submodule`` counts the submodule)."""
    tree = ast.parse(source_of(module).read_text())
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("treebo")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "treebo"
        ):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if is_module(sub) else node.module)
    return found - {module}


GRAPH = {m: imports_of(m) for m in MODULES}


#: Lines a module may hold: one concept per module, as BoTorch's hierarchical
#: conditional-kernel GP (kernel and model in about 570 lines).
MAX_MODULE_LINES = 600


def test_no_module_is_over_600_lines():
    long = {
        m: n
        for m in MODULES
        if (n := len(source_of(m).read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long


def test_imports_only_go_down_the_layers():
    upward = [
        (m, target)
        for m, targets in GRAPH.items()
        for target in targets
        if layer_of(target)[1] > layer_of(m)[1]
    ]
    assert not upward


def test_families_do_not_import_each_other():
    crossing = [
        (m, target)
        for m, targets in GRAPH.items()
        for target in targets
        if layer_of(m)[0] in FAMILIES
        and layer_of(target)[0] in FAMILIES
        and layer_of(target)[0] != layer_of(m)[0]
    ]
    assert not crossing


def test_the_shared_core_holds_only_code_two_users_share():
    # A module of the shared core serves at least two of the families and the
    # loop (directly or through another module of the core); single-family code
    # lives in its family.
    core = [
        m
        for m in MODULES
        if layer_of(m)[0] in ("treebo.gp", "treebo.strategies")
        and not source_of(m).name == "__init__.py"
    ]

    def reaches(module: str, target: str, seen: set[str]) -> bool:
        if target in GRAPH[module]:
            return True
        inside = [t for t in GRAPH[module] if t in core and t not in seen]
        seen.update(inside)
        return any(reaches(t, target, seen) for t in inside)

    users = {
        m: {
            layer_of(user)[0]
            for user in MODULES
            if layer_of(user)[0] in (*FAMILIES, "treebo.loop")
            and reaches(user, m, set())
        }
        for m in core
    }
    assert not {m: u for m, u in users.items() if len(u) < 2}
    assert not [m for m in core if "threading" in source_of(m).read_text()]


def test_the_loop_depends_on_the_strategy_seam_not_on_the_families():
    # The families register themselves when a name is first looked up.
    reaching = [
        (m, target)
        for m, targets in GRAPH.items()
        for target in targets
        if layer_of(m)[0] == "treebo.loop" and layer_of(target)[0] in FAMILIES
    ]
    assert not reaching
    assert all(layer_of(family)[1] == 2 for family in FAMILIES)


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle found by a depth-first walk (a path that returns)."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for target in sorted(graph.get(m, ())):
            if state.get(target) == 1:
                cycles.append([*stack, m, target])
            elif target not in state:
                visit(target, [*stack, m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    return cycles


def test_there_is_no_import_circle():
    assert sum(len(t) for t in GRAPH.values()) > 100  # the graph was read
    assert find_cycles(GRAPH) == []
    # the walk finds a circle where there is one
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


def test_only_the_top_level_loads_names_lazily():
    # The top level loads its few names on first use, so that `treebo --help`
    # answers without importing PyTorch; those names come from below it. Nothing
    # else re-exports: a name has one home.
    users = {m for m in MODULES if "lazy_exports(" in source_of(m).read_text()}
    assert users == {"treebo._exports", "treebo"}


def _options_types():
    for m in MODULES:
        if m.endswith("__main__"):
            continue
        module = importlib.import_module(m)
        for name, value in vars(module).items():
            if (
                name.endswith("Options")
                and dataclasses.is_dataclass(value)
                and value.__module__ == m
            ):
                yield value


def test_options_objects_have_at_most_8_fields():
    types = list(_options_types())
    assert len(types) >= 6
    assert {
        t.__name__: len(dataclasses.fields(t))
        for t in types
        if len(dataclasses.fields(t)) > 8
    } == {}


def test_minimize_takes_at_most_15_arguments():
    # objective, space, budget, seed and eleven keywords (``noise``, what the
    # objective is, beside ``maximize``; ``batch_size`` beside ``n_workers``, the
    # two ways to evaluate in parallel), ``candidates`` last; ``model``, the
    # deprecated alias of ``strategy``, does not count.
    parameters = set(inspect.signature(treebo.minimize).parameters) - {"model"}
    assert len(parameters) <= 15


def _resolve(path: str):
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


DOCUMENTED = sorted(
    {
        m.group(1)
        for page in (ROOT / "docs" / "api").glob("*.md")
        for m in re.finditer(r"^::: ([\w.]+)", page.read_text(), re.M)
    }
)


@pytest.mark.parametrize("path", DOCUMENTED)
def test_every_name_in_the_api_docs_imports_from_its_documented_path(path):
    assert _resolve(path) is not None


#: The import paths users rely on: each name at its one home, the family's
#: folder or the shared core, and the few the top level re-exports.
STABLE_PATHS = {
    "treebo.add_tree": "AddTreeGP AddTreeKernel AddTreeKernelOptions AddTreeOptions "
    "AddTreeStrategy AddTreeUCB AddTreeUCBOptions AddTreeUCBStrategy LocalStepOptions "
    "LOOP_KERNEL_OPTIONS VertexPosterior add_tree_beta optimize_add_tree_ucb "
    "LocalSteps AddTreeKernelSum AncestorInteractionKernel",
    "treebo.tree_additive": "TreeAdditiveGP TreeAdditiveKernel TreeAdditiveUCB "
    "TreeAdditiveOptions TreeAdditiveStrategy ComponentPosterior GridPosterior "
    "learn_tree_structure optimize_acqf_zooming message_passing_discrete "
    "tree_additive_beta",
    "treebo.treed": "TreedGP TreedLeafKernel TreedOptions TreedStrategy "
    "WeightedPseudoLikelihood fit_treed_gp TreePartition build_partition loo_prune "
    "leaf_base_kernel",
    "treebo.jenatton": "JenattonTreeGP IndependentLeafGP fit_leaf_gp",
    "treebo.bktf": "BKTF BKTFOptions BKTFStrategy",
    "treebo.gp": "fit_model loo_log_predictive loo_log_densities "
    "noise_floor_likelihood noise_floor_likelihood_options NoiseFloorLikelihood "
    "stationary_correlation",
    "treebo.optim": "optimize_acqf_tree optimize_acqf_mixed_tree NeighbourTable "
    "TreeCandidate maximize_batched optimize_acqf_sobol optimize_acqf_pool",
    "treebo.strategies": "Strategy Observations Proposal register_strategy "
    "make_strategy load_strategies",
    "treebo.space": "TreeSpace Vertex Real Integer Categorical Choice "
    "ConfigurationError TreeStructure",
    "treebo.integrations.botorch": "space_from_hierarchical_dependencies",
    "treebo": "TreeSpace TreeStructure TreeOptimizer minimize minimize_box",
}


@pytest.mark.parametrize("module", sorted(STABLE_PATHS))
def test_the_documented_paths_import(module):
    imported = importlib.import_module(module)
    for name in STABLE_PATHS[module].split():
        value = getattr(imported, name)
        assert name in imported.__all__
        if hasattr(value, "__module__") and module != "treebo":
            # a re-export is the family's own object, not a copy
            home = importlib.import_module(value.__module__)
            assert getattr(home, name) is value
