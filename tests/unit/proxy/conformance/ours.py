"""Cases of our own for what the issue lists and the peers' tests do not hold (not counted as peer cases)."""

from __future__ import annotations

from typing import Any

SRC = "polar-hpc issue 26"
CASES: list[dict[str, Any]] = []
