"""``polar-hpc eval``: a model measured through each recipe's real harness on a task file.

Each recipe runs as ``polar-hpc launch`` runs it (:func:`polar_hpc.launch.start.start_run`, waited for like
``--wait``) with its task file, model, samples per task, limit and seed replaced, sessions sampled
(``agent.policy = "sample"``). Its committed shards are then read back: per harness, the sessions, pass@1 (the
mean over tasks of each task's pass rate) with the 95% Wilson score interval of the sessions' pass rate, pass@k
for k = samples (the unbiased estimator), and why the others failed (:mod:`.causes`). Everything that can be known
before a run starts is checked first (:mod:`.checks`): a bad input is one line and nothing is launched. A run
that does not finish (``--timeout``, a lost component) is cancelled and measured over the sessions it committed,
said as such; :func:`from_runs` measures runs already made (``polar-hpc eval --from RUN``) the same way.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec

from polar_hpc.config import ConfigError, RunConfig
from polar_hpc.errors import PolarError
from polar_hpc.harness import get_adapter
from polar_hpc.launch.monitor import cancel_run, wait_run
from polar_hpc.launch.rundir import runs_root
from polar_hpc.launch.start import start_run
from polar_hpc.log import get_logger
from polar_hpc.measure.causes import FAILURES, Cause, cause_of
from polar_hpc.measure.checks import EvalInputError, eval_config
from polar_hpc.measure.stats import mean_pass_at_k, wilson
from polar_hpc.store.reader import ShardReader
from polar_hpc.tasks.source import iter_tasks
from polar_hpc.wire.control import RunStatus
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.rundir import RunDir

log = get_logger("measure")
WAITS = ("queue", "ready_wait", "postrun_wait", "prewarm_wait")
"""A session's timings that wait for another session's slot (``wire.results.TIMING_ORDER``), not its own work."""
INTERVAL = "95% Wilson score interval of the sessions' pass rate (each session one trial)"


class EvalRow(msgspec.Struct, kw_only=True):
    """One harness's figures on one task file (``--json`` writes a list of these)."""

    harness: str
    model: str
    tasks: str
    """The task file."""
    split: str
    """Its name without the suffix (``heldout`` for ``heldout.jsonl``)."""
    recipe: str
    n: int
    """Sessions read back (tasks x samples when every session committed)."""
    task_count: int
    samples: int
    pass_at_1: float
    ci_low: float
    ci_high: float
    pass_at_k: float | None
    """With k = ``samples`` (None for one sample a task)."""
    k: int
    causes: dict[str, int]
    """Sessions per failure cause (``no_tool_call``, ``parse_error``, ``wrong_edit``, ``timeout``, ``error``)."""
    wall_s: float
    """The run, launch to last commit (the inference server's start included)."""
    session_s: float | None
    """Median wall time of one session without its waits for a stage's slot (:data:`WAITS`): start, prepare,
    harness, trajectory, evaluation, teardown."""
    seed: int
    run_dir: str
    expected: int | None = None
    """Sessions the run was asked for (tasks x samples): more than ``n`` when it was cut before the end."""
    task_passes: dict[str, list[bool]] = msgspec.field(default_factory=dict)
    """Task id → whether each of its sessions passed (what ``eval --paired`` compares task by task)."""


class EvalReport(msgspec.Struct, kw_only=True):
    rows: list[EvalRow]
    interval: str = INTERVAL
    cut: list[str] = msgspec.field(default_factory=list)
    """One line per run that did not finish: its rows are over the sessions it committed."""


def summarize(results: Iterable[SessionResult], cfg: RunConfig, *, tasks: Path, model: str, samples: int,
              seed: int, wall_s: float, run_dir: str, recipe: str, expected: int | None = None) -> list[EvalRow]:
    """One row per harness of ``results`` (a run's committed sessions)."""
    fmt = get_adapter(cfg.agent.harness).action_format(cfg.agent)
    by_harness: dict[str, list[tuple[str, Cause, float]]] = defaultdict(list)
    for r in results:
        busy = r.duration_s - sum(r.timings.get(w, 0.0) for w in WAITS)
        by_harness[r.harness or cfg.agent.harness].append((r.task_id, cause_of(r, fmt), busy))
    rows = []
    for harness, sessions in sorted(by_harness.items()):
        per_task: dict[str, list[bool]] = defaultdict(list)
        for task_id, cause, _ in sessions:
            per_task[task_id].append(cause == "passed")
        counts = [(len(v), sum(v)) for v in per_task.values()]
        passed = sum(c for _, c in counts)
        low, high = wilson(passed, len(sessions))
        causes: dict[str, int] = {c: sum(1 for _, cause, _ in sessions if cause == c) for c in FAILURES}
        rows.append(EvalRow(
            harness=harness, model=model, tasks=str(tasks), split=tasks.stem, recipe=recipe, n=len(sessions),
            task_count=len(per_task), samples=samples, pass_at_1=mean_pass_at_k(counts, 1) or 0.0, ci_low=low,
            ci_high=high, pass_at_k=mean_pass_at_k(counts, samples) if samples > 1 else None, k=samples,
            causes=causes, wall_s=wall_s, session_s=statistics.median(d for _, _, d in sessions), seed=seed,
            run_dir=run_dir, expected=expected, task_passes=dict(sorted(per_task.items()))))
    return rows


def run_eval(recipes: Sequence[str | Path], *, model: str, tasks: str | Path, samples: int = 1,
             limit: int | None = None, seed: int = 0, overrides: Sequence[str] = (), runs_dir: Path | None = None,
             timeout_s: float | None = None, say: Callable[[str], None] | None = None) -> EvalReport:
    """Measure ``model`` through each recipe's harness on ``tasks``; every input is checked before the first
    run starts (``EvalInputError``, exit 2). ``say`` gets the runs' progress lines."""
    configs = [eval_config(r, model=model, tasks=tasks, samples=samples, limit=limit, seed=seed,
                           overrides=overrides) for r in recipes]
    report = EvalReport(rows=[])
    for recipe, cfg in zip(recipes, configs, strict=True):
        start = time.monotonic()
        where = (runs_dir or runs_root()) / f"{cfg.name}-eval-{time.strftime('%Y%m%d-%H%M%S')}"
        run, _ = start_run(cfg, where)
        log.info("eval %s: %s through %s on %s, run dir %s", recipe, model, cfg.agent.harness, tasks, run.root)
        code = wait_run(run, timeout_s=timeout_s, report=say or (lambda line: log.info("%s", line)))
        why = None
        if code != 0:
            why = "timed out" if code == 124 else "could not finish"
            cancel_run(run, reason=f"eval: the run {why}")
        results = _committed(run)
        expected = _expected(cfg)
        if why is not None:
            if not results:
                raise EvalRunError(f"eval {recipe}: the run {why} before any session committed (polar-hpc "
                                   f"status {run.root})")
            report.cut.append(f"eval {recipe}: the run {why}: the figures are over the {len(results)} of "
                              f"{expected if expected is not None else '?'} sessions it committed "
                              f"(polar-hpc resume {run.root}, then polar-hpc eval --from {run.root})")
        report.rows += summarize(results, cfg, tasks=Path(tasks).resolve(), model=model, samples=samples,
                                 seed=seed, wall_s=time.monotonic() - start, run_dir=str(run.root),
                                 recipe=str(recipe), expected=expected)
    return report


def from_runs(run_dirs: Sequence[str | Path]) -> EvalReport:
    """The figures of runs already made (an eval that was cut, any run of sampled sessions), from their committed
    shards and their own config; a run that did not finish is said in ``cut``. ``EvalInputError`` for a path that
    is not a run or holds no committed session."""
    runs = []
    for path in run_dirs:
        run = RunDir(path)
        if not run.exists():
            raise EvalInputError(f"--from {path}: not a run dir (expected {run.config_path})")
        results = _committed(run)
        if not results:
            raise EvalInputError(f"--from {path}: no committed session to measure in {run.shards}")
        runs.append((run, run.load_config(), results))
    report = EvalReport(rows=[])
    for run, cfg, results in runs:
        status = run.read_status()
        expected = _expected(cfg)
        if status is None or not status.finished:
            report.cut.append(f"eval --from {run.root}: the run did not finish: the figures are over the "
                              f"{len(results)} of {expected if expected is not None else '?'} sessions committed")
        report.rows += summarize(
            results, cfg, tasks=Path(cfg.tasks.path or "tasks"), model=cfg.inference.model or "?",
            samples=cfg.tasks.num_samples, seed=cfg.inference.random_seed or 0,
            wall_s=_wall(status), run_dir=str(run.root),
            recipe=str(run.config_path), expected=expected)
    return report


def _wall(status: RunStatus | None) -> float:
    """The run's wall time by its last status; 0.0 when unknown (no status, or one written before 2026-12-06,
    whose ``updated`` was a monotonic clock)."""
    if status is None or status.updated < status.started:
        return 0.0
    return status.updated - status.started


def _committed(run: RunDir) -> list[SessionResult]:
    reader = ShardReader(run.root, must_exist=False)
    results = list(reader.results())
    for problem in reader.problems:
        log.warning("eval %s: %s", run.root, problem)
    return results


def _expected(cfg: RunConfig) -> int | None:
    """Tasks x samples the run was asked for; None when its task file cannot be read any more."""
    try:
        return sum(1 for _ in iter_tasks(cfg)) * cfg.tasks.num_samples
    except (ConfigError, OSError):
        return None


class EvalRunError(PolarError):
    """A run that did not finish (its sessions are in its shards; ``polar-hpc resume`` goes on)."""

    exit_code = 1


def write_json(report: EvalReport, path: Path) -> None:
    path.write_text(json.dumps(msgspec.to_builtins(report.rows), indent=1) + "\n")


def table(report: EvalReport) -> str:
    """The report as a plain-text table, one row per harness, and what the interval is."""
    head = (f"{'harness':<16} {'model':<24} {'tasks':<12} {'n':>4} {'pass@1':>7} {'95% CI':>15} {'pass@k':>8} "
            + " ".join(f"{c:>12}" for c in FAILURES) + f" {'session':>8} {'wall':>7}")
    lines = [head]
    for r in report.rows:
        n = f"{r.n}" if r.expected in (None, r.n) else f"{r.n}/{r.expected}"

        pk = f"{r.pass_at_k:.3f}@{r.k}" if r.pass_at_k is not None else "-"
        model = r.model if len(r.model) <= 24 else "…" + r.model[-23:]
        lines.append(f"{r.harness:<16} {model:<24} {r.split:<12} {n:>4} {r.pass_at_1:>7.3f} "
                     f"{f'[{r.ci_low:.3f}, {r.ci_high:.3f}]':>15} {pk:>8} "
                     + " ".join(f"{r.causes.get(c, 0):>12}" for c in FAILURES)
                     + f" {(f'{r.session_s:.0f}s' if r.session_s is not None else '-'):>8} {r.wall_s:>6.0f}s")
    return "\n".join([*lines, f"CI: {report.interval}", *report.cut])
