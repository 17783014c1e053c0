"""Run one oracle session of a harness locally: a reference server (unless an engine is given), one gateway rank
in-process (bwrap sandbox, continuation rendering, ``prefix_merging``, divergence measured, records kept), the
task's tests as the grader. Returns the :class:`~polar_hpc.probe.report.ProbeRow` of the session."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import msgspec

from polar_hpc.config.run import (
    AgentSpec,
    BuilderSpec,
    EvaluatorSpec,
    GatewayConfig,
    InferenceConfig,
    Policy,
    RunConfig,
    RuntimeBackend,
    RuntimeSpec,
    TaskSource,
    TaskTemplate,
)
from polar_hpc.errors import PolarError
from polar_hpc.log import get_logger
from polar_hpc.probe.report import ProbeRow, probe_row
from polar_hpc.tasks.source import task_file
from polar_hpc.wire.calls import CompletionRecord
from polar_hpc.wire.codec import read_jsonl
from polar_hpc.wire.rundir import RunDir

log = get_logger("probe")

PREPARE = "git init -q . && git add -A && git -c user.email=probe@polar -c user.name=polar commit -qm base"
TEST_COMMAND = "python3 -m pytest -rA -p no:cacheprovider"
SHELL_COMMAND = "python3 -m polar_hpc.harness.mini_agent --max-turns 8 {instruction}"
REPO_ROOT = Path(__file__).resolve().parents[2]
BUNDLED_TASKS = REPO_ROOT / "recipes" / "tasks" / "demo.jsonl"
VERSION_TIMEOUT_S = 90.0
"""OpenHands imports its whole SDK before it reads ``--version``: 10 s of CPU, 42 s on a busy 2-core machine."""


class ProbeError(PolarError, ValueError):
    """Probe arguments that cannot run; the message says what was expected."""


class ProbeSpec(msgspec.Struct, kw_only=True, frozen=True):
    harness: str
    out: Path
    recipe: Path | None = None
    """A recipe whose task source (file, template), runtime and evaluator the probe takes, so a task set of any
    layout probes as it runs; without one, the demo layout (``{problem}``, ``repos/{repo}``, pytest)."""
    overrides: tuple[str, ...] = ()
    """``--set`` overrides of ``recipe``."""
    tasks: Path | None = None
    """The task file (default: the recipe's, else :data:`BUNDLED_TASKS`)."""
    task_id: str | None = None
    command: str | None = None
    """The shell harness's command (default: the recipe's, else the bundled mini agent)."""
    engine: str | None = None
    """A running SGLang / reference server; default: start a reference server with ``model``."""
    model: str = "asset:tiny-qwen3"
    runtime: RuntimeBackend | None = None
    """Default: the recipe's ``runtime.backend``, else bwrap."""
    policy: Policy = "oracle"
    agent_timeout_s: float = 300.0
    max_turns: int | None = None
    """``agent.max_turns`` (default: none, as the recipe's is not taken)."""
    context_length: int = 32768
    harness_args: tuple[str, ...] = ()
    harness_settings: tuple[tuple[str, str], ...] = ()
    """``agent.settings`` keys of the harness (``--harness-setting mode=text``), values as given."""


def _demo_config(spec: ProbeSpec) -> RunConfig:
    """The bundled demo tasks' layout: a repo dir per task, its pytest tests as the grader."""
    tasks = spec.tasks or BUNDLED_TASKS
    return RunConfig(
        runtime=RuntimeSpec(host_python=True, prepare=[PREPARE]),
        evaluator=EvaluatorSpec(name="command", command=TEST_COMMAND, timeout_s=120),
        tasks=TaskSource(path=str(tasks), template=TaskTemplate(instruction="{problem}", workspace="repos/{repo}",
                                                                metadata_fields=["repo"])),
        recipe_dir=str(tasks.parent),
    )


def _base_config(spec: ProbeSpec) -> RunConfig:
    if spec.recipe is None:
        return _demo_config(spec)
    from polar_hpc.config import ConfigError, load_recipe

    try:
        cfg = load_recipe(spec.recipe, list(spec.overrides))
    except (ConfigError, OSError) as err:
        raise ProbeError(f"--recipe {spec.recipe}: {err}") from None
    if spec.tasks is not None:
        cfg = msgspec.structs.replace(cfg, tasks=msgspec.structs.replace(cfg.tasks, path=str(spec.tasks)))
    return cfg


def probe_config(spec: ProbeSpec, url: str) -> RunConfig:
    """The run of one probe session: the task source, runtime and evaluator of the recipe (or the demo layout);
    the harness, policy, engine and a one-session rank of the probe's own."""
    check_harness(spec)
    base = _base_config(spec)
    path = task_file(base)
    if path is None or not path.is_file():
        where = "--task" if spec.tasks or spec.recipe is None else "tasks.path of the recipe"
        raise ProbeError(f"{where}: expected a JSONL file of tasks (rows like recipes/tasks/demo.jsonl, "
                         f"fields in docs/tasks.md), found nothing at {path}")
    command = spec.command or (base.agent.command if base.agent.harness == "shell" else None)
    if spec.harness == "shell" and not command:
        command = SHELL_COMMAND
    runtime = base.runtime if spec.runtime is None else msgspec.structs.replace(base.runtime, backend=spec.runtime)
    return msgspec.structs.replace(
        base,
        name=f"probe-{spec.harness}",
        inference=InferenceConfig(engine="external", endpoints=[url], model=spec.model, served_model_name="policy",
                                  context_length=spec.context_length, max_new_tokens=256, request_timeout_s=120),
        gateway=GatewayConfig(init_pool=1, ready_buffer=1, run_pool=1, postrun_pool=1, start_gate=1,
                              agent_timeout_s=spec.agent_timeout_s, session_timeout_s=spec.agent_timeout_s + 120,
                              drain_grace_s=20, render="continuation", keep_records=True, measure_divergence=True),
        runtime=runtime,
        agent=AgentSpec(harness=spec.harness, command=command, policy=spec.policy, max_turns=spec.max_turns,
                        settings=_settings(spec, base.agent)),
        builder=BuilderSpec(name="prefix_merging"),
        tasks=msgspec.structs.replace(base.tasks, path=str(path), num_samples=1, limit=None),
    )


def check_harness(spec: ProbeSpec) -> None:
    """A known harness whose CLI is installed; ProbeError naming both otherwise (before any server starts)."""
    from polar_hpc.harness import HarnessError, get_adapter
    from polar_hpc.harness.toolchain import resolve_harness

    try:
        adapter = get_adapter(spec.harness)
        if spec.harness != "shell":
            resolve_harness(adapter.binary)
    except HarnessError as err:
        raise ProbeError(f"harness {spec.harness!r}: {err}") from None


def _settings(spec: ProbeSpec, base: AgentSpec) -> dict[str, object]:
    """The recipe's ``agent.settings`` when it runs the same harness, under the command line's."""
    settings: dict[str, object] = dict(base.settings) if base.harness == spec.harness else {}
    settings.update(spec.harness_settings)
    if spec.harness_args:
        settings["extra_args"] = list(spec.harness_args)
    return settings


def harness_version(harness: str) -> str:
    from polar_hpc.harness import ADAPTERS, HarnessError
    from polar_hpc.harness.toolchain import resolve_harness

    if harness == "shell":
        return ""
    adapter = ADAPTERS[harness]() if harness in ADAPTERS else None
    if adapter is None:
        return ""
    try:
        launch = resolve_harness(adapter.binary)
    except HarnessError:
        return ""
    try:
        done = subprocess.run([*launch.argv, *adapter.version_args], capture_output=True, text=True,
                              timeout=VERSION_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return adapter.version_of(done.stdout.strip() or done.stderr.strip())


@contextlib.contextmanager
def _engine(spec: ProbeSpec) -> Iterator[str]:
    if spec.engine:
        yield spec.engine
        return
    from polar_hpc.assets import resolve_model
    from polar_hpc.reference.options import ReferenceOptions
    from polar_hpc.reference.process import start_reference_server

    spec.out.mkdir(parents=True, exist_ok=True)
    options = ReferenceOptions(context_length=spec.context_length, threads=1)
    with start_reference_server(resolve_model(spec.model), options, log_path=spec.out / "reference.log") as handle:
        yield handle.url


def _only_task(cfg: RunConfig, spec: ProbeSpec) -> RunConfig:
    """The first task of the file, or ``task_id``, as a one-row task file in the run dir."""
    from polar_hpc.tasks.source import iter_tasks

    tasks = list(iter_tasks(cfg))
    chosen = [t for t in tasks if spec.task_id in (None, t.task_id)][:1]
    if not chosen:
        raise ProbeError(f"--task-id {spec.task_id!r}: no such task in {cfg.tasks.path}; "
                         f"it has: {', '.join(t.task_id for t in tasks) or 'none'}")
    lines = [line for line in Path(cfg.tasks.path or '').read_text().splitlines() if line.strip()]
    row = lines[tasks.index(chosen[0])]
    one = spec.out / "task.jsonl"
    one.write_text(row + "\n")
    return msgspec.structs.replace(cfg, tasks=msgspec.structs.replace(cfg.tasks, path=str(one)))


async def _run_one_session(cfg: RunConfig, run_dir: Path) -> None:
    """The probe's one session straight onto one in-process rank: a fresh run dir has nothing to dispatch or
    resume, so no coordinator."""
    from polar_hpc.gateway.rank import GatewayRank
    from polar_hpc.tasks.source import iter_tasks
    from polar_hpc.wire.session import Session

    (task,) = iter_tasks(cfg)
    async with GatewayRank(cfg, 0, run_dir) as rank:
        await rank.submit(Session(task=task, sample_index=0))
        await rank.wait_idle()
        await rank.drain(0.0)


def run_probe(spec: ProbeSpec) -> ProbeRow:
    import asyncio

    from polar_hpc.store.reader import ShardReader

    spec.out.mkdir(parents=True, exist_ok=True)
    run_dir = spec.out / "run"
    if run_dir.exists():
        raise ProbeError(f"--out: {run_dir} exists; give a fresh folder")
    check_harness(spec)
    version = harness_version(spec.harness)
    with _engine(spec) as url:
        cfg = _only_task(probe_config(spec, url), spec)
        asyncio.run(_run_one_session(cfg, run_dir))
    reader = ShardReader([run_dir])
    results = list(reader.results(None))
    if not results:
        raise ProbeError(f"the session left no result in {RunDir(run_dir).shards} "
                         f"({'; '.join(reader.problems) or 'no shard'})")
    result = results[0]
    records_files = sorted(RunDir(run_dir).records.glob("*.jsonl"))
    records = [r for p in records_files for r in read_jsonl(p, CompletionRecord)]
    return probe_row(result, records, records_path=", ".join(str(p) for p in records_files),
                     shard=", ".join(str(p) for p in reader.shards), version=version)
