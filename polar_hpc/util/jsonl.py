"""Rows of a JSONL file, each a JSON object, with the place (``path:line``) every error names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def json_objects(path: Path, error: type[Exception]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, row)`` per non-blank line; a line that is not a JSON object raises ``error`` naming it."""
    with path.open() as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise error(f"{where}: not valid JSON ({err.msg} at column {err.colno})") from None
            if not isinstance(row, dict):
                raise error(f"{where}: expected a JSON object per line, got {type(row).__name__}")
            yield where, row
