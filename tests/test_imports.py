"""The package's import graph: no cycle, and every import goes down the layers.

The graph is read with ``ast`` from the source, so it counts imports inside functions,
under ``TYPE_CHECKING`` and the ``"balance_opt.x:Name"`` strings the registries import.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "balance_opt"
TARGET = re.compile(r"balance_opt(\.\w+)*(:\w+)?")

# Lowest first: a module may import its own layer and the layers before it. A module
# belongs to the layer of the longest prefix listed (relative to balance_opt; "" is the
# package itself, which re-exports the instance, evaluator, result and the solver API).
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "errors",
        "clock",
        "crmath",
        "status",
        "claims",
        "instance_checks",
        "instance",
        "profiles",
        "model",
        "files",
        "work",
        "solution_checks",
        "io",
        "generator",
        "stochastic.distribution",
    ),
    ("evaluator", "solution", "result", "mode_comparison", "families", "stochastic.simulate", "stochastic"),
    ("solvers", "", "data"),
    ("batch", "library", "adversary", "stochastic.experiment", "online"),
    ("report", "stochastic.report", "online.report", "online.report_figures", "calibration"),
    ("commands", "cli"),
)


def modules() -> dict[str, Path]:
    """Dotted name -> file of every module of the package."""
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _owner(name: str, mods: dict[str, Path]) -> str | None:
    """The module that defines ``name`` (a module, or a name inside one)."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.AST, package: str, mods: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            up = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*up, base] if base else up)
        subs = [f"{base}.{a.name}" for a in node.names]
        # "from pkg import submodule" needs the submodule; Python initialises pkg first anyway
        return subs + ([base] if any(s not in mods for s in subs) else [])
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and TARGET.fullmatch(node.value):
        return [node.value.partition(":")[0]]
    return []


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, anywhere in its source."""
    mods = modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(node, package, mods):
                owner = _owner(target, mods)
                if owner is not None and owner != name:
                    found.add(owner)
        graph[name] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> int:
    """The index in LAYERS of the longest prefix that ``module`` falls under."""
    rel = module.removeprefix("balance_opt").removeprefix(".")
    found = [
        (len(prefix), i)
        for i, prefixes in enumerate(LAYERS)
        for prefix in prefixes
        if rel == prefix or rel.startswith(prefix + ".")
    ]
    if not found:
        pytest.fail(f"{module} belongs to no layer: add it to LAYERS")
    return max(found)[1]


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_cycles_are_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_layers_import_only_downward() -> None:
    graph = import_graph()
    upward = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets if layer(t) > layer(m))
    assert upward == []


# Inside the solvers layer: what each solver family may import besides itself (dotted
# prefixes under balance_opt.solvers). The incumbent rule (one module, the evaluator's
# judgement of a candidate) is below all; the heuristics are the bottom family; common/ holds what
# two proving families share (bounds, eligibility, warm start, HiGHS output) and reaches
# the heuristics for Algorithms 1 and 2; no proving family imports another or the
# heuristics directly. The registry (balance_opt.solvers itself) names every family.
FAMILIES: dict[str, tuple[str, ...]] = {
    "incumbent": (),
    "heuristic": ("base", "incumbent"),
    "common": ("heuristic", "incumbent"),
    "exhaustive": ("base", "common"),
    "milp": ("base", "common", "incumbent"),
    "exact": ("base", "common", "incumbent"),
}


def _family(module: str) -> str | None:
    rel = module.removeprefix("balance_opt.solvers.")
    return rel.split(".")[0] if module.startswith("balance_opt.solvers.") else None


def family_violations(graph: dict[str, set[str]]) -> list[str]:
    """``module -> target`` for every import between solver families that FAMILIES does not allow."""
    out = []
    for module, targets in graph.items():
        own = _family(module)
        if own is None or own == "base":
            continue
        if own not in FAMILIES:
            pytest.fail(f"solver family {own} ({module}) is not in FAMILIES: add it with what it may import")
        for target in targets:
            other = _family(target)
            if other is not None and other != own and other not in FAMILIES[own]:
                out.append(f"{module} -> {target}")
    return sorted(out)


def test_solver_families_import_only_what_they_share() -> None:
    assert family_violations(import_graph()) == []


def test_family_violations_are_found() -> None:
    graph = {
        "balance_opt.solvers.exact.search": {"balance_opt.solvers.milp.bounds", "balance_opt.solvers.common"},
        "balance_opt.solvers.milp.bounds": {"balance_opt.solvers.heuristic.fast", "balance_opt.model"},
        "balance_opt.solvers.common.bounds": {"balance_opt.solvers.heuristic.fast"},
    }
    assert family_violations(graph) == [
        "balance_opt.solvers.exact.search -> balance_opt.solvers.milp.bounds",
        "balance_opt.solvers.milp.bounds -> balance_opt.solvers.heuristic.fast",
    ]


def test_no_public_name_is_also_a_module() -> None:
    """``balance_opt.evaluate`` is the function; its module is ``balance_opt.evaluator``."""
    import importlib.util

    import balance_opt

    for name in balance_opt.__all__:
        assert importlib.util.find_spec(f"balance_opt.{name}") is None, name
    assert callable(balance_opt.evaluate)


def test_one_generate_entry_point_knows_every_preset_and_family() -> None:
    import balance_opt
    from balance_opt.families import FAMILIES
    from balance_opt.generator import PRESETS

    for preset in (*PRESETS, *FAMILIES):
        assert balance_opt.generate(preset, users=4, seed=1).num_users == 4, preset
