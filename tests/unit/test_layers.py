"""The layer order of the ``polar_hpc`` packages, asserted from every import of every module (top level, inside
functions, under ``TYPE_CHECKING``): a package imports only packages in a layer below its own (packages that
share a layer are independent of each other), and no chain of imports between modules comes back to where it
started. docs/architecture.md explains the order; change both together.

A package's command-line entry point (``cli.py``, ``cli_*.py``) parses arguments and wires the package to whatever
it needs, so it belongs to the top layer with ``polar_hpc.cli``; nothing else imports it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "polar_hpc"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("log", "errors"),
    ("config",),
    ("util",),
    ("wire",),
    ("assets", "harness"),
    ("images",),
    ("runtime",),
    ("inference", "trajectory"),
    ("proxy", "evaluate"),
    ("tasks",),
    ("store",),
    ("postrun",),
    ("coordinator", "gateway"),
    ("launch",),
    ("client",),
    ("train",),
    ("view", "probe", "measure"),
    ("sim",),
    ("cli",),
)
"""Bottom first. ``cli`` also holds every package's ``cli.py`` / ``cli_*.py`` and ``__main__``."""

ALLOWED: frozenset[tuple[str, str]] = frozenset({
    # (importing module, imported module) pairs tolerated while a move is in progress, each with who removes it.
})


def layer_of(package: str) -> int:
    for i, names in enumerate(LAYERS):
        if package in names:
            return i
    raise AssertionError(f"package polar_hpc.{package} has no layer: add it to LAYERS in {__file__}")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def package_of(module: str) -> str:
    """The layer's package name of a module: ``cli`` for entry points, else its first part below polar_hpc."""
    parts = module.split(".")
    if parts[-1] == "cli" or parts[-1].startswith("cli_") or parts[-1] == "__main__":
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


def test_every_package_has_a_layer() -> None:
    packages = {package_of(m) for m in modules()} - {""}
    for package in sorted(packages):
        layer_of(package)
    listed = {p for names in LAYERS for p in names}
    assert not listed - packages, f"LAYERS names packages that do not exist: {sorted(listed - packages)}"


def test_packages_import_only_layers_below() -> None:
    problems = []
    for module, edges in import_graph().items():
        src = package_of(module)
        if not src:
            continue
        for target, line in edges.items():
            dst = package_of(target)
            if not dst or dst == src or (module, target) in ALLOWED:
                continue
            if dst == "cli" and src != "cli":
                problems.append(f"{module}:{line} imports the entry point {target}; only the cli layer may")
            elif layer_of(dst) >= layer_of(src) and src != "cli":
                how = "the same layer as" if layer_of(dst) == layer_of(src) else "a layer above"
                problems.append(f"{module}:{line} (layer {layer_of(src)} {src!r}) imports {target} (layer "
                                f"{layer_of(dst)} {dst!r}), {how} its own")
    assert not problems, "imports that point up or sideways:\n  " + "\n  ".join(problems)


def test_no_import_cycles_between_modules() -> None:
    graph = {m: {t for t in edges if t in modules() and (m, t) not in ALLOWED} for m, edges in import_graph().items()}
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


if __name__ == "__main__":  # python3 tests/unit/test_layers.py: the package graph these tests check, by layer
    edges: dict[str, set[str]] = {}
    for mod, targets in import_graph().items():
        src = package_of(mod)
        edges.setdefault(src, set()).update(package_of(t) for t in targets if package_of(t) not in ("", src))
    for i, names in reversed(list(enumerate(LAYERS))):
        for name in names:
            print(f"{i:2d} {name:12s} -> {' '.join(sorted(edges.get(name, set()), key=layer_of, reverse=True))}")
    graph = import_graph()
    allowed = "\n  ".join(f"{m} -> {t}" + ("" if t in graph.get(m, {}) else "  (no longer imported: remove it)")
                           for m, t in sorted(ALLOWED))
    print(f"allowlisted: {len(ALLOWED)}" + (f"\n  {allowed}" if ALLOWED else ""))
