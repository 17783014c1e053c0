"""Harbor-format tasks (Terminal-Bench style) as a task source: ``polar-hpc tasks import harbor DIR...``.

A Harbor task is a folder (facts from harbor 0.25: ``models/task/paths.py``, ``models/task/config.py``,
``verifier/verifier.py``):

    task.toml              [agent] timeout_sec, [verifier] timeout_sec, [environment] cpus / memory_mb / workdir
    instruction.md         what the agent is asked
    environment/Dockerfile the agent's container (its build context is environment/)
    tests/test.sh          the verifier: copied to /tests after the agent ends and run in the agent's container;
                           it writes /logs/verifier/reward.json (name -> number) or reward.txt (one number)
    solution/solve.sh      optional: the reference solution (Harbor's oracle agent copies solution/ to /solution
                           and runs /solution/solve.sh in the workdir)

Each task becomes one row of a task file: its instruction, the image built from its Dockerfile
(``images prepare`` builds it: ``image_context`` / ``image_containerfile``), ``solve.sh`` as the oracle's
``solution_commands``, and under ``harbor`` what the ``harbor`` evaluator and the recipe need (the task folder,
timeouts, resources, workdir). ``recipes/harbor-podman.toml`` runs such a file (``harbor-bwrap.toml`` where
the tasks allow bwrap).

:func:`harbor_task` applies a row's task.toml to its task when the task file is read (``tasks/source.py``): the
agent and verifier timeouts, cpus / memory (docker / podman), the workdir, and in bwrap the layout that stands in
for the task's image, where its Dockerfile allows it (:func:`bwrap_layout`).
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from polar_hpc.config import ConfigError
from polar_hpc.errors import PolarError
from polar_hpc.evaluate.harbor import HARBOR_KEY, TEST_SCRIPT, VERIFIER_DIR, HarborMeta
from polar_hpc.images.base import SWE_BASE_IMAGE
from polar_hpc.runtime import backend
from polar_hpc.runtime.bwrap import SCRATCH_DIRS_NOT_UNDER
from polar_hpc.wire.session import SANDBOX_SOLUTION_DIR, SOLUTION_COMMANDS, SOLUTION_DIR, Task

__all__ = ["HARBOR_KEY", "HarborError", "bwrap_layout", "harbor_task", "import_harbor", "read_task"]

CONFIG = "task.toml"
INSTRUCTION = "instruction.md"
DOCKERFILE = "environment/Dockerfile"
SOLUTION = "solution"
SOLVE_SCRIPT = "solution/solve.sh"
BWRAP_BASES = (SWE_BASE_IMAGE,)
"""Dockerfile bases bwrap stands in for with the host's system dirs (python3, pytest, git, patch: see docs/tasks.md)."""
BWRAP_PASSIVE = frozenset({"WORKDIR", "LABEL", "MAINTAINER", "EXPOSE", "CMD", "ENTRYPOINT"})
"""Dockerfile instructions that change no file (a session runs its own commands: CMD / ENTRYPOINT do not run)."""
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


SIZE_UNITS_MB = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}
"""Harbor's older ``memory = "2G"`` (before ``memory_mb``): its size suffixes, in MB."""


def _memory_mb(env: dict[str, Any], where: str) -> float | None:
    """``memory_mb``, or the older ``memory`` size string Harbor still reads ("2G", "512M"); both must agree."""
    memory_mb = _number(env, "memory_mb", where)
    legacy = env.get("memory")
    if legacy is None:
        return memory_mb
    text = str(legacy).strip().upper()
    try:
        mb = float(text[:-1]) * SIZE_UNITS_MB[text[-1:]]
    except (KeyError, ValueError):
        raise HarborError(f"{where}: memory must be a size like '2G' or '512M', got {legacy!r}") from None
    if memory_mb is not None and int(mb) != int(memory_mb):
        raise HarborError(f"{where}: memory = {legacy!r} ({int(mb)} MB) and memory_mb = {int(memory_mb)} disagree")
    return float(int(mb))


def _instructions(text: str) -> Iterator[tuple[int, str, str]]:
    """(line number, INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    start = 0
    parts: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not parts and (not line.strip() or line.lstrip().startswith("#")):
            continue
        start = start if parts else n
        parts.append(line.rstrip().removesuffix("\\"))
        if line.rstrip().endswith("\\"):
            continue
        word, _, rest = " ".join(parts).strip().partition(" ")
        parts = []
        yield start, word.upper(), rest.strip()


def top_folder(path: str) -> str | None:
    """``/app`` of ``/app/src/x.py`` (a sandbox path); None for ``/``."""
    parts = PurePosixPath(path).parts
    return f"/{parts[1]}" if len(parts) > 1 else None


def _read_only(path: PurePosixPath) -> bool:
    top = top_folder(str(path))
    return top is None or top[1:] in SCRATCH_DIRS_NOT_UNDER


def bwrap_layout(dockerfile: Path) -> tuple[list[str], str | None]:
    """What a bwrap session needs in place of the image built from ``dockerfile``: its ``COPY`` lines as
    ``SRC:DST`` uploads, or why bwrap cannot stand in for it (a line that installs or runs anything, a base that is
    not the host's system, a copy into a system folder or into ``/`` itself)."""
    context = dockerfile.parent.resolve()
    workdir, uploads = PurePosixPath("/"), []
    for n, word, args in _instructions(dockerfile.read_text()):
        at = f"{dockerfile.name} line {n}: {word} {args[:80]}"
        words = args.split()
        if "$" in args:
            return [], f"{at} (a build variable)"
        if word == "FROM":
            if words[:1] != words or words[0] not in BWRAP_BASES:
                return [], f"{at} (bwrap stands in only for {', '.join(BWRAP_BASES)})"
        elif word == "WORKDIR":
            workdir = workdir / args
            if _read_only(workdir):
                return [], f"{at} (a read-only folder in bwrap)"
        elif word in ("COPY", "ADD"):
            if len(words) < 2 or any(w.startswith("--") or "://" in w or set(w) & set("*?[") for w in words):
                return [], f"{at} (bwrap copies plain files of the build context only)"
            *srcs, dst = words
            for src in srcs:
                path = (context / src).resolve()
                if not path.exists() or not path.is_relative_to(context):
                    return [], f"{at} ({src} is not in the build context {context})"
                target = workdir / dst
                if path.is_file() and (dst.endswith("/") or len(srcs) > 1):
                    target = target / path.name
                if _read_only(target) or path.is_file() and len(target.parts) < 3:
                    return [], f"{at} (bwrap's system folders and / are read-only)"
                uploads.append(f"{path}:{target}")
        elif word not in BWRAP_PASSIVE:
            return [], f"{at} (bwrap has no image to run or set it in)"
    return uploads, None


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
    memory_mb = _memory_mb(env, f"{where} [environment]")
    instruction = (folder / INSTRUCTION).read_text().strip()
    if not instruction:
        raise HarborError(f"harbor task {folder}: {INSTRUCTION} is empty")
    workdir = env.get("workdir") or _dockerfile_workdir((folder / DOCKERFILE).read_text())
    uploads, needs_image = bwrap_layout(folder / DOCKERFILE)
    meta = HarborMeta(
        task_dir=str(folder), name=str(sections["task"].get("name", "")),
        agent_timeout_s=_number(sections["agent"], "timeout_sec", f"{where} [agent]"),
        verifier_timeout_s=_number(sections["verifier"], "timeout_sec", f"{where} [verifier]") or 600.0,
        cpus=_number(env, "cpus", f"{where} [environment]"),
        memory_gb=memory_mb / 1024 if memory_mb else None, workdir=str(workdir) if workdir else None,
        uploads=uploads, needs_image=needs_image)
    task_id = folder.name
    row: dict[str, Any] = {
        "task_id": task_id, "instruction": instruction,
        "image": image_name(task_id, folder / "environment"),
        "image_context": str(folder / "environment"), "image_containerfile": str(folder / DOCKERFILE),
        HARBOR_KEY: msgspec.to_builtins(meta),
    }
    if (folder / SOLVE_SCRIPT).is_file():
        if [p.name for p in (folder / SOLUTION).iterdir()] == ["solve.sh"]:
            row[SOLUTION_COMMANDS] = [(folder / SOLVE_SCRIPT).read_text()]  # the script's own lines in the trace
        else:  # solve.sh calls files beside it: all of solution/ goes to /solution, and it runs from there
            script = f"{SANDBOX_SOLUTION_DIR}/solve.sh"
            row[SOLUTION_DIR] = str(folder / SOLUTION)
            row[SOLUTION_COMMANDS] = [f"chmod +x {script} && {script}"]
    return row


def harbor_task(task: Task, raw: Any, default_agent_timeout_s: float, where: str) -> Task:
    """``task`` (read from a row of `tasks import harbor`) with its task.toml applied: ``[agent] timeout_sec`` the
    agent budget (the session budget grows by what it adds), ``[verifier] timeout_sec`` the evaluator's,
    ``[environment] cpus`` / ``memory_mb`` the container's limits (docker / podman; bwrap has none), its workdir the
    runtime's; in bwrap, folders of the session's own for the workdir, the copied files, ``/tests`` and ``/logs``,
    or a :class:`ConfigError` naming the task and the Dockerfile line bwrap cannot stand in for."""
    try:
        meta = msgspec.convert(raw, HarborMeta)
    except msgspec.ValidationError as err:
        raise ConfigError(f"{where}: field {HARBOR_KEY!r}: {err} (write it with `polar-hpc tasks import harbor`)") \
            from None
    runtime, evaluator = task.runtime, task.evaluator
    assert runtime is not None and evaluator is not None and task.timeout_s is not None
    runtime = msgspec.structs.replace(runtime, workdir=meta.workdir or runtime.workdir)
    kind = backend(runtime.backend)
    if kind.sets_resources:
        runtime = msgspec.structs.replace(runtime, cpus=meta.cpus or runtime.cpus,
                                          memory_gb=meta.memory_gb or runtime.memory_gb)
    if kind.read_only_root:
        if meta.needs_image is not None:
            raise ConfigError(f"{where}: harbor task {task.task_id} needs its image, bwrap cannot stand in for it: "
                              f"{meta.needs_image}; run it with runtime.backend = \"podman\"")
        workdir = top_folder(runtime.workdir)
        if workdir is not None and workdir[1:] in SCRATCH_DIRS_NOT_UNDER and workdir not in ("/tmp", "/polar"):
            raise ConfigError(f"{where}: harbor task {task.task_id}: workdir {runtime.workdir} is a read-only "
                              f"folder in bwrap; run it with runtime.backend = \"podman\"")
        folders = {workdir, "/tests", top_folder(VERIFIER_DIR),
                   *(top_folder(item.partition(":")[2]) for item in meta.uploads)}
        runtime = msgspec.structs.replace(runtime, uploads=[*runtime.uploads, *meta.uploads], scratch_dirs=sorted(
            {*runtime.scratch_dirs, *(f for f in folders if f and f[1:] not in SCRATCH_DIRS_NOT_UNDER)}))
    agent_timeout_s = meta.agent_timeout_s or default_agent_timeout_s
    return msgspec.structs.replace(
        task, runtime=runtime, agent_timeout_s=agent_timeout_s,
        timeout_s=task.timeout_s + max(0.0, agent_timeout_s - default_agent_timeout_s),
        evaluator=msgspec.structs.replace(evaluator, timeout_s=meta.verifier_timeout_s))


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
