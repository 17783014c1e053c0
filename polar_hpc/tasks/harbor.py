"""Harbor-format tasks (Terminal-Bench style) as a task source: ``polar-hpc tasks import harbor DIR...``.

A Harbor task is a folder (facts from harbor 0.25: ``models/task/paths.py``, ``models/task/config.py``,
``verifier/verifier.py``):

    task.toml              [agent] timeout_sec, [verifier] timeout_sec, [environment] cpus / memory_mb / workdir
    instruction.md         what the agent is asked
    environment/Dockerfile the agent's container (its build context is environment/)
    tests/test.sh          the verifier: copied to /tests after the agent ends and run in the agent's container;
                           it writes /logs/verifier/reward.json (name -> number) or reward.txt (one number)
    solution/solve.sh      optional: the reference solution (Harbor's oracle agent runs it)

Each task becomes one row of a task file: its instruction, the image built from its Dockerfile
(``images prepare`` builds it: ``image_context`` / ``image_containerfile``), ``solve.sh`` as the oracle's
``solution_commands``, and under ``harbor`` what the ``harbor`` evaluator and the recipe need (the task folder,
timeouts, resources, workdir). ``recipes/harbor-podman.toml`` runs such a file.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from polar_hpc.errors import PolarError
from polar_hpc.evaluate.harbor import HARBOR_KEY, TEST_SCRIPT, HarborMeta
from polar_hpc.wire.records import SOLUTION_COMMANDS

CONFIG = "task.toml"
INSTRUCTION = "instruction.md"
DOCKERFILE = "environment/Dockerfile"
SOLVE_SCRIPT = "solution/solve.sh"
IMAGE_PREFIX = "localhost/polar-harbor/"


class HarborError(PolarError, ValueError):
    """A task folder that is not a Harbor task; the message names the folder and the file."""


def _dockerfile_workdir(text: str) -> str | None:
    found = re.findall(r"^\s*WORKDIR\s+(\S+)\s*$", text, flags=re.MULTILINE | re.IGNORECASE)
    return found[-1] if found else None


def _number(table: dict[str, Any], key: str, where: str) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise HarborError(f"{where}: {key} must be a number > 0, got {value!r}")
    return float(value)


def image_name(task_id: str, environment: Path) -> str:
    """A tag per task and environment content, so an edited Dockerfile or context builds a new image."""
    h = hashlib.sha256()
    for path in sorted(p for p in environment.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(environment)).encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{IMAGE_PREFIX}{re.sub(r'[^a-z0-9._-]', '-', task_id.lower())}:{h.hexdigest()[:12]}"


def read_task(folder: Path) -> dict[str, Any]:
    """One Harbor task folder as a task row (raises :class:`HarborError` naming the folder and the file)."""
    folder = folder.resolve()
    for rel in (CONFIG, INSTRUCTION, DOCKERFILE, TEST_SCRIPT):
        if not (folder / rel).is_file():
            raise HarborError(f"harbor task {folder}: no {rel} (a Harbor task has task.toml, instruction.md, "
                              f"environment/Dockerfile and tests/test.sh)")
    where = str(folder / CONFIG)
    try:
        config = tomllib.loads((folder / CONFIG).read_text())
    except tomllib.TOMLDecodeError as err:
        raise HarborError(f"{where}: not TOML ({err})") from None
    sections = {k: config.get(k) or {} for k in ("task", "agent", "verifier", "environment")}
    for key, value in sections.items():
        if not isinstance(value, dict):
            raise HarborError(f"{where}: [{key}] must be a table, got {type(value).__name__}")
    env = sections["environment"]
    memory_mb = _number(env, "memory_mb", f"{where} [environment]")
    instruction = (folder / INSTRUCTION).read_text().strip()
    if not instruction:
        raise HarborError(f"harbor task {folder}: {INSTRUCTION} is empty")
    workdir = env.get("workdir") or _dockerfile_workdir((folder / DOCKERFILE).read_text())
    meta = HarborMeta(
        task_dir=str(folder), name=str(sections["task"].get("name", "")),
        agent_timeout_s=_number(sections["agent"], "timeout_sec", f"{where} [agent]"),
        verifier_timeout_s=_number(sections["verifier"], "timeout_sec", f"{where} [verifier]") or 600.0,
        cpus=_number(env, "cpus", f"{where} [environment]"),
        memory_gb=memory_mb / 1024 if memory_mb else None, workdir=str(workdir) if workdir else None)
    task_id = folder.name
    row: dict[str, Any] = {
        "task_id": task_id, "instruction": instruction,
        "image": image_name(task_id, folder / "environment"),
        "image_context": str(folder / "environment"), "image_containerfile": str(folder / DOCKERFILE),
        HARBOR_KEY: msgspec.to_builtins(meta),
    }
    if (folder / SOLVE_SCRIPT).is_file():
        row[SOLUTION_COMMANDS] = [(folder / SOLVE_SCRIPT).read_text()]
    return row


def task_folders(paths: Iterable[Path]) -> Iterator[Path]:
    """Each path is a task folder (it has task.toml) or a folder of task folders (a data set)."""
    for path in paths:
        if not path.is_dir():
            raise HarborError(f"harbor: {path} is not a folder")
        if (path / CONFIG).is_file():
            yield path
            continue
        inner = sorted(p for p in path.iterdir() if (p / CONFIG).is_file())
        if not inner:
            raise HarborError(f"harbor: {path} has no {CONFIG}, nor any folder with one")
        yield from inner


def import_harbor(paths: Iterable[Path], out: Path) -> int:
    """Write the rows of every task under ``paths`` to ``out``; returns how many."""
    rows = [read_task(p) for p in task_folders(paths)]
    seen: dict[str, str] = {}
    for row in rows:
        tid = row["task_id"]
        if tid in seen:
            raise HarborError(f"harbor: two tasks named {tid!r}: {seen[tid]} and {row[HARBOR_KEY]['task_dir']}")
        seen[tid] = row[HARBOR_KEY]["task_dir"]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return len(rows)
