"""Root conftest: loads every fixture module in tests/fixtures/ so each area can own its fixtures."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = sorted(
    f"tests.fixtures.{p.stem}" for p in (Path(__file__).parent / "fixtures").glob("*.py") if p.stem != "__init__"
)

collect_ignore = ["fixtures"]
"""Fixture data holds the tests of demo tasks (they fail until a task is solved): run in sandboxes, never here."""

REPO_ROOT = Path(__file__).resolve().parents[1]
ROOT_LITTER_OK = (".*", "__pycache__", "*.egg-info", "runs", "build", "slurm-*.out")
"""Names a test may leave in the repository root (caches, and what .gitignore lists)."""


@pytest.fixture(autouse=True)
def _no_new_files_in_repo_root() -> Iterator[None]:
    """A test that leaves a file in the repository root (pytest's cwd: a command run without its own cwd, a
    relative redirection) fails, named, instead of the file turning up in a commit (the stray ``oom``)."""
    before = set(os.listdir(REPO_ROOT))
    yield
    new = sorted(n for n in set(os.listdir(REPO_ROOT)) - before
                 if not any(fnmatch.fnmatch(n, p) for p in ROOT_LITTER_OK))
    if new:
        pytest.fail(f"left {new} in the repository root {REPO_ROOT} (or a process running beside it did)",
                    pytrace=False)
