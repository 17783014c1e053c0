"""``polar-hpc tasks import``: SWE-bench / SWE-Gym rows (JSONL or Parquet, as ``datasets`` exports them) → task rows.

Each output row holds what a recipe's ``[tasks.template]`` reads (``instance_id``, ``problem_statement``,
``image``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``, ``repo``, ``version``), the gold ``patch`` as ``solution_patch``
(the oracle policy's input) and the grading spec as ``swe_spec`` (the ``swebench`` evaluator's input).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import msgspec

from polar_hpc.errors import PolarError
from polar_hpc.evaluate.swe_spec import SPEC_KEY, GradingSpec, SpecError, swebench_spec, swegym_spec
from polar_hpc.tasks import Dataset
from polar_hpc.tasks.images import docker_uri, swebench_image, swegym_image
from polar_hpc.util.jsonl import json_objects
from polar_hpc.wire.session import SOLUTION_PATCH

DATASETS: tuple[Dataset, ...] = get_args(Dataset)
REQUIRED = ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "version",
            "FAIL_TO_PASS", "PASS_TO_PASS")


class TaskImportError(PolarError, ValueError):
    """A row that cannot become a task; the message names the file and row."""


def read_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, row) for each row of a JSONL or Parquet file."""
    if not path.is_file():
        raise TaskImportError(f"{path}: no such file (expected the JSONL or Parquet export of a SWE dataset)")
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise TaskImportError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from None
        for i, row in enumerate(pq.read_table(path).to_pylist()):
            yield f"{path}: row {i}", row
        return
    yield from json_objects(path, TaskImportError)


def _tests(value: Any, where: str, key: str) -> list[str]:
    if isinstance(value, str):  # SWE-bench ships the lists as JSON text
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            raise TaskImportError(f"{where}: {key} must be a list of test ids or its JSON text, "
                                  f"got {value[:60]!r}") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskImportError(f"{where}: {key} must be a list of strings, got {type(value).__name__}")
    return value


def task_row(dataset: Dataset, row: dict[str, Any], where: str, *, namespace: str | None = None) -> dict[str, Any]:
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise TaskImportError(f"{where}: a {dataset} row needs {', '.join(missing)}; it has {', '.join(sorted(row))}")
    iid = str(row["instance_id"])
    try:
        spec: GradingSpec = swebench_spec(row) if dataset == "swe-bench" else swegym_spec(row)
    except SpecError as err:
        raise TaskImportError(f"{where}: instance {iid}: {err}") from None
    ns = [namespace] if namespace else []
    image = swebench_image(iid, *ns) if dataset == "swe-bench" else swegym_image(iid, *ns)
    return make_task_row(row, spec, docker_uri(image), dataset=dataset, where=where)


def make_task_row(row: dict[str, Any], spec: GradingSpec, image: str, *, dataset: str,
                  where: str = "row") -> dict[str, Any]:
    """The task row of one instance row, its grading spec and its image reference."""
    return {
        "instance_id": spec.instance_id,
        "problem_statement": str(row["problem_statement"]),
        "image": image,
        "repo": spec.repo,
        "version": spec.version,
        "FAIL_TO_PASS": _tests(row["FAIL_TO_PASS"], where, "FAIL_TO_PASS"),
        "PASS_TO_PASS": _tests(row["PASS_TO_PASS"], where, "PASS_TO_PASS"),
        SOLUTION_PATCH: str(row["patch"]),  # what the oracle policy applies
        SPEC_KEY: msgspec.to_builtins(spec),
        "dataset": dataset,
    }


def import_rows(dataset: Dataset, src: Path, out: Path, *, namespace: str | None = None,
                limit: int | None = None) -> int:
    """Write the task rows of ``src`` to ``out`` (atomically); returns how many. No row is an error."""
    from polar_hpc.util.fs import write_atomic

    if dataset not in DATASETS:
        raise TaskImportError(f"dataset: expected one of {', '.join(DATASETS)}, got {dataset!r}")
    lines: list[str] = []
    seen: set[str] = set()
    for where, row in read_rows(src):
        task = task_row(dataset, row, where, namespace=namespace)
        if task["instance_id"] in seen:
            raise TaskImportError(f"{where}: duplicate instance_id {task['instance_id']!r}")
        seen.add(task["instance_id"])
        lines.append(json.dumps(task, ensure_ascii=False))
        if limit is not None and len(lines) >= limit:
            break
    if not lines:
        raise TaskImportError(f"{src}: holds no rows")
    write_atomic(out, ("\n".join(lines) + "\n").encode(), 0o644)
    return len(lines)
