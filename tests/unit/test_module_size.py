"""No module of ``polar_hpc`` over ``MAX_LINES`` lines: a module that grows past it holds more than one job; split it
by job into siblings whose names say what they hold (as ``store/rebuild.py`` / ``store/sessions.py`` were)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "polar_hpc"
MAX_LINES = 400


def test_no_module_over_the_limit() -> None:
    sizes = {p.relative_to(PACKAGE.parent).as_posix(): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    over = sorted((n, path) for path, n in sizes.items() if n > MAX_LINES)
    assert not over, f"modules over {MAX_LINES} lines: " + ", ".join(f"{path} ({n})" for n, path in reversed(over))
