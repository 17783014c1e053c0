"""What ``polar-hpc eval`` checks before it launches anything; each problem is one line (exit 2).

The task file holds tasks and their workspaces exist; the recipe's harness is installed here (the doctor's own
check, :func:`polar_hpc.launch.doctor.check_node_and_harnesses`); the model is a dir the reference server can load
(:func:`polar_hpc.reference.checkpoint.model_dir_problems`). The rest of the launch preflight runs when the run
starts, still before anything is submitted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from polar_hpc.config import ConfigError, RunConfig, load_recipe
from polar_hpc.errors import PolarError
from polar_hpc.tasks.source import iter_tasks


class EvalInputError(PolarError):
    """A recipe, task file or model ``eval`` cannot measure with; the message is one line naming it."""


def _model_problem(cfg: RunConfig, model: str) -> str | None:
    if cfg.inference.engine != "reference":
        return None
    from polar_hpc.assets import AssetError, resolve_model
    from polar_hpc.reference.checkpoint import model_dir_problems

    try:
        path = resolve_model(model)
    except (AssetError, FileNotFoundError) as err:
        return f"--model {model}: {err}"
    problems = model_dir_problems(path)
    return f"--model {model}: the reference server cannot load it: {'; '.join(problems)}" if problems else None


def _harness_problem(cfg: RunConfig, recipe: str) -> str | None:
    from polar_hpc.launch.doctor import check_node_and_harnesses

    missing = [f for f in check_node_and_harnesses(cfg) if f.required and not f.ok]
    if not missing:
        return None
    what = "; ".join(f"{f.name}: {f.detail}" + (f" (fix: {f.fix})" if f.fix else "") for f in missing)
    return f"{recipe}: agent.harness = {cfg.agent.harness!r} cannot run here: {what}"


def _tasks_problem(cfg: RunConfig, tasks: Path) -> str | None:
    if not tasks.is_file():
        return f"--tasks {tasks}: no such file (expected a task JSONL, e.g. recipes/tasks/distill/heldout.jsonl)"
    try:
        found = list(iter_tasks(cfg))
    except ConfigError as err:
        return f"--tasks {tasks}: {str(err).splitlines()[0]}"
    if not found:
        return (f"--tasks {tasks}: the file holds no tasks (expected one JSON object a line, like "
                f"recipes/tasks/demo.jsonl)")
    gone = [t.task_id for t in found if t.workspace and not Path(t.workspace).is_dir()]
    if gone:
        first = next(t for t in found if t.task_id == gone[0])
        return (f"--tasks {tasks}: {len(gone)} task(s) have no workspace folder, e.g. {gone[0]!r}: "
                f"{first.workspace} (tasks.template.workspace = {cfg.tasks.template.workspace!r})")
    return None


def eval_config(recipe: str | Path, *, model: str, tasks: str | Path, samples: int = 1, limit: int | None = None,
                seed: int = 0, overrides: Sequence[str] = ()) -> RunConfig:
    """The recipe with the evaluation's task file, model, samples, limit and seed put in, sessions sampled
    (``overrides`` come last and win); ``EvalInputError`` naming the first problem."""
    if samples < 1:
        raise EvalInputError(f"--samples must be >= 1, got {samples}")
    if limit is not None and limit < 1:
        raise EvalInputError(f"--limit must be >= 1, got {limit}")
    task_path = Path(tasks).expanduser().resolve()
    model_spec = model if model.startswith("asset:") else str(Path(model).expanduser().resolve())
    sets = [f"tasks.path={json.dumps(str(task_path))}", f"inference.model={json.dumps(model_spec)}",
            f"tasks.num_samples={samples}", f"inference.random_seed={seed}", 'agent.policy="sample"',
            'launch.backend="local"', *([f"tasks.limit={limit}"] if limit is not None else []), *overrides]
    try:
        cfg = load_recipe(recipe, sets)
    except ConfigError as err:
        raise EvalInputError(str(err).splitlines()[0]) from None
    for problem in (_tasks_problem(cfg, task_path), _harness_problem(cfg, str(recipe)),
                    _model_problem(cfg, cfg.inference.model)):
        if problem:
            raise EvalInputError(problem)
    return cfg
