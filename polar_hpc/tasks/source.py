"""Task source: JSONL rows + the recipe's TaskTemplate -> Tasks (pure, no I/O beyond reading the file)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from polar_hpc.config import ConfigError, RunConfig
from polar_hpc.tasks.harbor import HARBOR_KEY, harbor_task
from polar_hpc.util.jsonl import json_objects
from polar_hpc.wire.session import (
    SOLUTION_COMMANDS,
    SOLUTION_DIR,
    SOLUTION_FILES,
    SOLUTION_FIRST_TRY,
    SOLUTION_LOOK,
    SOLUTION_PATCH,
    Task,
)

ORACLE_FIELDS = (SOLUTION_PATCH, SOLUTION_COMMANDS, SOLUTION_FILES, SOLUTION_LOOK, SOLUTION_DIR, SOLUTION_FIRST_TRY)
"""Row keys always kept in the task metadata: the reference solution the oracle policy writes."""


PLACEHOLDER = re.compile(r"\{\{|\}\}|(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""What a template substitutes: ``{name}`` (a field of the row); ``{{`` / ``}}`` are literal braces. Every other
brace is the command's own and passes through: ``${HOME}``, awk's ``{print $1}``, ``find -exec cmd {} +``."""


class _Fields:
    """A row's fields for the templates of one task; ``where`` names the row (file:line)."""

    def __init__(self, row: dict[str, Any], where: str) -> None:
        self.row = dict(row)
        self.where = where

    def fill(self, template: str, key: str) -> str:
        """``template`` (the recipe's ``key``) with the row's fields put in."""

        def one(m: re.Match[str]) -> str:
            name = m.group(1)
            if name is None:
                return m.group(0)[0]
            if name not in self.row:
                raise ConfigError(
                    f"{key}: placeholder {{{name}}} is not a field of the task row at {self.where} (its fields: "
                    f"{', '.join(sorted(self.row)) or 'none'}); write {{{{{name}}}}} for literal braces, "
                    f"${{{name}}} for a shell variable")
            return str(self.row[name])

        return PLACEHOLDER.sub(one, template)


def _test_list(value: Any, where: str, name: str) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ConfigError(f"{where}: {name} must be a list of test ids or its JSON text, "
                              f"got {value[:60]!r}") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {name} must be a list of strings, got {type(value).__name__}")
    return value


def task_from_row(cfg: RunConfig, row: dict[str, Any], where: str) -> Task:
    tpl = cfg.tasks.template
    tasks = task_file(cfg)
    tasks_dir = str(tasks.parent) if tasks is not None else cfg.recipe_dir or "."
    fields = _Fields({**row, "recipe_dir": cfg.recipe_dir or ".", "tasks_dir": tasks_dir}, where)
    task_id = fields.fill(tpl.id, "tasks.template.id")
    fields.row["task_id"] = task_id
    runtime = msgspec.structs.replace(
        cfg.runtime,
        prepare=[fields.fill(p, f"runtime.prepare[{i}]") for i, p in enumerate(cfg.runtime.prepare)],
        image=fields.fill(tpl.image, "tasks.template.image") if tpl.image else cfg.runtime.image,
    )
    ev = cfg.evaluator
    evaluator = msgspec.structs.replace(
        ev,
        command=fields.fill(ev.command, "evaluator.command") if ev.command else None,
        fail_to_pass=(_test_list(row["FAIL_TO_PASS"], where, "FAIL_TO_PASS") if "FAIL_TO_PASS" in row
                      else ev.fail_to_pass),
        pass_to_pass=(_test_list(row["PASS_TO_PASS"], where, "PASS_TO_PASS") if "PASS_TO_PASS" in row
                      else ev.pass_to_pass),
    )
    workspace = None
    if tpl.workspace:
        ws = Path(fields.fill(tpl.workspace, "tasks.template.workspace"))
        workspace = str(ws if ws.is_absolute() else Path(cfg.recipe_dir or ".") / ws)
    task = Task(
        task_id=task_id,
        instruction=fields.fill(tpl.instruction, "tasks.template.instruction"),
        num_samples=cfg.tasks.num_samples,
        runtime=runtime,
        agent=cfg.agent,
        builder=cfg.builder,
        evaluator=evaluator,
        timeout_s=cfg.gateway.session_timeout_s,
        workspace=workspace,
        metadata={k: row[k] for k in (*ORACLE_FIELDS, *tpl.metadata_fields) if k in row},
    )
    return harbor_task(task, row[HARBOR_KEY], cfg.gateway.agent_timeout_s, where) if HARBOR_KEY in row else task


def task_file(cfg: RunConfig) -> Path | None:
    if not cfg.tasks.path:
        return None
    p = Path(cfg.tasks.path)
    return p if p.is_absolute() else Path(cfg.recipe_dir or ".") / p


def iter_tasks(cfg: RunConfig) -> Iterator[Task]:
    """Tasks of the recipe's task source, in file order; bad rows raise ConfigError naming file:line."""
    path = task_file(cfg)
    if path is None:
        return
    if not path.is_file():
        raise ConfigError(f"tasks.path: no such task file {path}")
    seen: set[str] = set()
    count = 0
    for where, row in json_objects(path, ConfigError):
        task = task_from_row(cfg, row, where)
        if task.task_id in seen:
            raise ConfigError(f"{where}: duplicate task id {task.task_id!r}")
        seen.add(task.task_id)
        yield task
        count += 1
        if cfg.tasks.limit is not None and count >= cfg.tasks.limit:
            return
