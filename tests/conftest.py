"""Root conftest: loads every fixture module in tests/fixtures/ so each area can own its fixtures."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = sorted(
    f"tests.fixtures.{p.stem}" for p in (Path(__file__).parent / "fixtures").glob("*.py") if p.stem != "__init__"
)

collect_ignore = ["fixtures"]
"""Fixture data holds the tests of demo tasks (they fail until a task is solved): run in sandboxes, never here."""
