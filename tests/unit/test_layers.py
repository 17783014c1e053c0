"""What each ``polar_hpc`` package may import, asserted from every import of every module (top level, inside
functions, under ``TYPE_CHECKING``): a package imports only the packages its line in ``MAY_IMPORT`` names, those
lines form no cycle (so they order the packages, bottom to top, as the data flows), no chain of imports between
modules comes back to where it started, and a few boundaries that matter are held by name (``NEVER``).
docs/architecture.md draws the same picture; change both together. ``python3 tests/unit/test_layers.py`` prints
the packages in order with what each imports today.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "polar_hpc"

BASE = frozenset({"log", "errors", "config", "util", "wire"})
"""What every package above ``wire`` may import (``log`` and ``errors`` are below everything)."""

MAY_IMPORT: dict[str, frozenset[str]] = {
    "log": frozenset(),
    "errors": frozenset(),
    "config": frozenset({"errors"}),
    "util": frozenset({"log", "errors", "config"}),
    "wire": frozenset({"log", "errors", "config", "util"}),
    # what a session is made of: models and pins, harness adapters, images, sandboxes
    "assets": frozenset({"log", "errors"}),
    "harness": BASE,
    "images": frozenset({"log", "errors", "util"}),
    "runtime": BASE | {"images"},
    # the model side: engine client, chat templates and parsers, provider APIs, the oracle, the proxy
    "engine": BASE | {"assets"},
    "chat": BASE,
    "reference": BASE | {"engine"},
    "inference": BASE | {"assets", "runtime", "reference", "engine"},  # engine: a restarted server loads policy.json
    "providers": BASE | {"chat"},
    "policy": BASE | {"engine", "chat", "providers"},
    "proxy": BASE | {"engine", "chat", "providers", "policy"},
    # after a session: trajectories, evaluation, the shards
    "trajectory": BASE,
    "evaluate": BASE | {"runtime"},
    "tasks": BASE | {"harness", "images", "runtime", "trajectory", "evaluate"},
    "store": BASE,
    "postrun": BASE | {"runtime", "trajectory", "evaluate", "store"},
    # the services and the launcher
    "coordinator": BASE | {"tasks", "store"},
    "gateway": BASE | {"assets", "harness", "runtime", "engine", "chat", "policy", "proxy", "evaluate", "store",
                       "postrun"},
    "launch": BASE | {"assets", "harness", "runtime", "tasks"},
    # consumers of the shards
    "export": BASE | {"store"},
    "train": BASE | {"assets", "engine", "reference", "inference", "evaluate", "store", "coordinator", "launch",
                     "export"},
    "report": BASE | {"evaluate", "store", "train"},
    "view": BASE | {"assets", "store", "export", "report"},
    "probe": BASE | {"assets", "harness", "tasks", "store", "proxy", "gateway", "reference", "report"},
    "measure": BASE | {"assets", "harness", "tasks", "store", "launch", "reference"},
    "sim": BASE | {"engine", "store", "gateway"},
    "cli": frozenset(),  # the top: it may import anything (checked below: nothing imports it)
}
"""Package -> the packages it may import, bottom first (each line names only lines above it)."""

NEVER: tuple[tuple[str, str, str], ...] = (
    ("store", "proxy", "the shards know nothing of how they were produced"),
    ("store", "inference", "the shards know nothing of how they were produced"),
    ("proxy", "gateway", "the proxy runs alone (polar-hpc proxy) and inside a rank"),
    ("proxy", "store", "the proxy hands records on; the rank writes shards"),
    ("proxy", "runtime", "the proxy does not know sandboxes"),
    ("train", "gateway", "the trainer talks to a run through its coordinator and engines only"),
    ("train", "proxy", "the trainer talks to a run through its coordinator and engines only"),
    ("engine", "proxy", "the engine client serves the proxy, the trainer and the oracle alike"),
)
"""Boundaries that matter, held by name so that widening ``MAY_IMPORT`` across one is a conscious change."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def package_of(module: str) -> str:
    """The package a module belongs to: its first part below polar_hpc (``cli`` for ``__main__``)."""
    parts = module.split(".")
    if parts[-1] == "__main__":
        return "cli"
    return parts[1] if len(parts) > 1 else ""


def imported(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """(module imported, line) for every ``polar_hpc`` import in the file; ``from pkg import sub`` names ``pkg.sub``."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield (sub if sub in modules() else target), node.lineno


@cache
def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported polar_hpc module: first line}."""
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules().items():
        edges = graph.setdefault(module, {})
        for target, line in imported(module, path):
            if target.startswith("polar_hpc.") and target != module:
                edges.setdefault(target, line)
    return graph


def package_edges() -> dict[tuple[str, str], str]:
    """(package, package it imports) -> the first ``module:line`` that does."""
    edges: dict[tuple[str, str], str] = {}
    for module, targets in sorted(import_graph().items()):
        src = package_of(module)
        for target, line in sorted(targets.items(), key=lambda t: t[1]):
            dst = package_of(target)
            if src and dst and dst != src:
                edges.setdefault((src, dst), f"{module}:{line} imports {target}")
    return edges


def test_every_package_has_a_line() -> None:
    packages = {package_of(m) for m in modules()} - {""}
    missing, extra = packages - MAY_IMPORT.keys(), MAY_IMPORT.keys() - packages
    assert not missing, f"packages without a MAY_IMPORT line: {sorted(missing)}"
    assert not extra, f"MAY_IMPORT names packages that do not exist: {sorted(extra)}"


def test_lines_name_only_packages_above() -> None:
    """Each line names only packages whose lines come before it: the lines are a bottom-up order, no cycle."""
    seen: set[str] = set()
    for package, allowed in MAY_IMPORT.items():
        assert allowed <= seen, f"{package} may import {sorted(allowed - seen)}, which come later in MAY_IMPORT"
        seen.add(package)


def test_packages_import_only_what_their_line_allows() -> None:
    problems = [f"{where} ({src} -> {dst}: not in MAY_IMPORT[{src!r}])" for (src, dst), where in package_edges().items()
                if src != "cli" and dst not in MAY_IMPORT[src]]
    assert not problems, "imports outside the allow-lists:\n  " + "\n  ".join(problems)


def test_allow_lists_are_used() -> None:
    """A line names what the package imports today, no more: an unused entry would let an arrow in unnoticed."""
    used = set(package_edges())
    unused = [f"{src} -> {dst}" for src, allowed in MAY_IMPORT.items() for dst in sorted(allowed)
              if (src, dst) not in used and not (allowed is BASE or dst in BASE)]
    assert not unused, "MAY_IMPORT entries no import uses (remove them):\n  " + "\n  ".join(unused)


def test_nothing_imports_the_command_line() -> None:
    problems = [where for (src, dst), where in package_edges().items() if dst == "cli" and src != "cli"]
    assert not problems, "imports of the command line from below it:\n  " + "\n  ".join(problems)


def test_boundaries_that_matter() -> None:
    for src, dst, why in NEVER:
        assert dst not in MAY_IMPORT[src], f"MAY_IMPORT lets {src} import {dst}, but {why}"


def test_no_import_cycles_between_modules() -> None:
    graph = {m: {t for t in edges if t in modules()} for m, edges in import_graph().items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target):], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert not cycles, "import cycles:\n  " + "\n  ".join(" -> ".join(c) for c in cycles)


if __name__ == "__main__":  # python3 tests/unit/test_layers.py: each package, bottom first, and what it imports
    edges: dict[str, set[str]] = {}
    for src, dst in package_edges():
        edges.setdefault(src, set()).add(dst)
    order = list(MAY_IMPORT)
    for name in order:
        print(f"{name:12s} -> {' '.join(sorted(edges.get(name, set()), key=order.index, reverse=True))}")
