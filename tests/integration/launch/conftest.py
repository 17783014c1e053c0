"""Every test here that launches a run gets its run dir from ``run_dir``: whatever the run launched (Slurm jobs,
local processes) is ended when the test ends, passed or failed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.launch.helpers import stop_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "run"
    try:
        yield path
    finally:
        stop_run(path)
