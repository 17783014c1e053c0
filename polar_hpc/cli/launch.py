"""``polar-hpc launch | status | cancel | resume``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, get_args

from polar_hpc.config.run import Backend


def register(sub: Any) -> None:
    p = sub.add_parser("launch", help="submit a run from a recipe (like sbatch)")
    p.add_argument("recipe", help="recipe TOML, e.g. recipes/local-demo.toml")
    p.add_argument("--backend", choices=get_args(Backend), help="override launch.backend")
    p.add_argument("--run-dir", help="run directory (default: runs/<name>-<timestamp>)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe value, e.g. --set gateway.num_ranks=2 (repeatable)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the resolved config and sbatch scripts; submit nothing")
    p.add_argument("--no-submit", action="store_true",
                   help="create the run dir and print the component commands; submit nothing (slurm/polar-run.sbatch)")
    p.add_argument("--wait", action="store_true", help="follow the run until it ends; exit status reflects the outcome")
    p.add_argument("--timeout", type=float, default=None, help="with --wait: give up waiting after this many seconds")
    p.set_defaults(func=run_launch)

    s = sub.add_parser("status", help="show a run's components, progress and recent errors")
    s.add_argument("run_dir")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=run_status)

    c = sub.add_parser("cancel", help="drain and stop every component of a run (shards are committed)")
    c.add_argument("run_dir")
    c.add_argument("--grace", type=float, default=None,
                   help="seconds to let components drain before killing (default: the run's drain grace + margins)")
    c.set_defaults(func=run_cancel)

    r = sub.add_parser("resume", help="resubmit what is not running; finished sessions are not rerun")
    r.add_argument("run_dir")
    r.add_argument("--wait", action="store_true")
    r.add_argument("--timeout", type=float, default=None)
    r.set_defaults(func=run_resume)

    d = sub.add_parser("doctor", help="check what a run needs on this node (sandbox, Slurm, Node, harnesses, "
                                      "inference, assets, disk) and how to fix each")
    d.add_argument("recipe", nargs="?", help="check for this recipe (what it needs becomes required)")
    d.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    d.add_argument("--on-partition", action="store_true",
                   help="also run the node checks on a compute node of each partition the recipe uses (srun)")
    d.add_argument("--probe-timeout", type=float, default=300.0, metavar="S",
                   help="--on-partition: give up on a probe job not done this long after submission (default 300)")
    d.add_argument("--node-json", action="store_true", help=argparse.SUPPRESS)
    d.set_defaults(func=run_doctor)


def _open_run(path: str) -> Any:
    """An existing run dir, or a one-line error (exit 2) naming what is missing."""
    from polar_hpc.config import ConfigError
    from polar_hpc.wire.rundir import CONFIG, RunDir

    run = RunDir(path)
    if not run.root.is_dir():
        raise ConfigError(f"{run.root}: no such run directory")
    if not run.exists():
        raise ConfigError(f"{run.root}: not a polar-hpc run directory (no {CONFIG})")
    return run


def run_launch(args: argparse.Namespace) -> int:
    from polar_hpc.config import ConfigError, dump_config, load_recipe
    from polar_hpc.launch.preflight import preflight_problems

    overrides = list(args.overrides)
    if args.backend:
        overrides.append(f"launch.backend={args.backend}")
    cfg = load_recipe(args.recipe, overrides)
    if args.dry_run:
        from polar_hpc.launch.rundir import default_run_dir
        from polar_hpc.launch.submit import render_sbatch
        from polar_hpc.wire.rundir import RunDir

        run = RunDir(args.run_dir or cfg.launch.run_dir or default_run_dir(cfg))
        out = ["# resolved config", dump_config(cfg)]
        for component, script in render_sbatch(cfg, run).items():
            out += [f"# sbatch script: {component}", script]
        problems = preflight_problems(cfg)
        out += ["# preflight: " + ("ok" if not problems else f"{len(problems)} problem(s), see stderr")]
        sys.stdout.write("\n".join(out) + "\n")
        if problems:
            raise ConfigError("the run cannot start:\n  - " + "\n  - ".join(problems))
        return 0
    from polar_hpc.launch.start import new_run
    from polar_hpc.launch.submit import submit_run

    run = new_run(cfg, args.run_dir)
    if args.no_submit:
        import shlex

        from polar_hpc.launch.jobs import component_argv
        from polar_hpc.launch.submit import planned_jobs

        for component, index in planned_jobs(cfg):
            sys.stdout.write(f"{component} {index} {shlex.join(component_argv(run, component, index))}\n")
        return 0
    ledger = submit_run(run.load_config(), run)
    lines = [f"run dir: {run.root}", f"backend: {ledger.backend}"]
    for job in ledger.jobs:
        lines.append(f"  {job.component}-{job.index}: job {job.job_id}")
    lines += [
        "logs:",
        f"  tail -F {run.logs()}/*/*/*.out",
        f"watch: polar-hpc status {run.root}",
        f"stop:  polar-hpc cancel {run.root}",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    if args.wait:
        code = _follow(run, args.timeout)
        _print_summary(run)
        return code
    return 0


def _follow(run: Any, timeout_s: float | None) -> int:
    """``--wait``: a live display on a terminal, one line per change in a batch log."""
    from polar_hpc.launch.monitor import wait_run

    if sys.stderr.isatty():
        from polar_hpc.launch.live import LiveDisplay

        with LiveDisplay(sys.stderr, run) as live:
            return wait_run(run, timeout_s=timeout_s, report=live.say, on_status=live.update)
    return wait_run(run, timeout_s=timeout_s, report=_report)


def _report(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _print_summary(run: Any) -> None:
    from polar_hpc.launch.monitor import progress_line

    sys.stdout.write(f"final: {progress_line(run.read_status())}\nshards: {run.shards}\n")


def _committed(run: Any) -> str:
    """What the run's committed shards hold (the truth after a cancel or a crash, whatever status.json says)."""
    from polar_hpc.store.resume import resume_index

    index = resume_index(run.shards)
    return f"{len(index.keys)} sessions committed in {index.shards} shard(s)"


def _run_state(run: Any, status: Any) -> str:
    from polar_hpc.launch.monitor import stopped_line

    cancelled = run.cancelled()
    if status is not None and status.finished:
        return "finished"
    if cancelled is not None:
        return f"{stopped_line(cancelled)}: {_committed(run)}"
    return "running"


def run_status(args: argparse.Namespace) -> int:
    import msgspec

    from polar_hpc.launch.live import wait_line
    from polar_hpc.launch.monitor import component_states, progress_line, recent_errors
    from polar_hpc.wire.rundir import component_name
    from polar_hpc.wire.waits import read_waits

    run = _open_run(args.run_dir)
    jobs = run.read_jobs()
    comps = component_states(run, jobs) if jobs else []
    status = run.read_status()
    state = _run_state(run, status)
    errors = recent_errors(jobs) if jobs and not state.startswith("cancelled") else []
    waits = read_waits(run.root)
    if args.json:
        doc = {"run_dir": str(run.root), "state": state, "components": comps, "status": status,
               "waits": list(waits.values()), "recent_errors": errors}
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(doc)).decode() + "\n")
        return 0
    rows = [f"{'component':<14} {'job':>10} {'pid':>8} {'state':<12} {'endpoint':<8} {'reason':<14} {'node':<10} "
            f"{'elapsed':>10} {'limit':>10}"]
    for c in comps:
        name = component_name(c.component, c.index)
        rows.append(f"{name:<14} {c.job_id:>10} {c.pid or '-':>8} {c.state:<12} {'yes' if c.endpoint else 'no':<8} "
                    f"{c.reason or '-':<14} {c.node or '-':<10} {c.elapsed or '-':>10} {c.time_limit or '-':>10}")
    resubmitted = [line for c in comps if (line := c.resubmitted_line())]
    if resubmitted:
        rows += ["", *resubmitted]
    if waits:
        rows += ["", *(wait_line(w) for w in waits.values())]
    rows.append("")
    rows.append(progress_line(status))
    rows.append(state)
    if errors:
        rows += ["", "recent errors:", *(f"  {e}" for e in errors)]
    sys.stdout.write("\n".join(rows) + "\n")
    return 0


def run_cancel(args: argparse.Namespace) -> int:
    from polar_hpc.config import ConfigError
    from polar_hpc.launch.monitor import cancel_run
    from polar_hpc.wire.rundir import JOBS

    run = _open_run(args.run_dir)
    if run.read_jobs() is None:
        raise ConfigError(f"{run.root}: nothing was launched here (no {JOBS})")
    if not cancel_run(run, grace_s=args.grace):
        sys.stdout.write(f"{run.root} already finished; nothing to cancel ({_committed(run)})\n")
        return 0
    sys.stdout.write(f"cancelled {run.root}: {_committed(run)}\n")
    return 0


def run_resume(args: argparse.Namespace) -> int:
    from polar_hpc.launch.monitor import dead_components, progress_line
    from polar_hpc.launch.submit import submit_run
    from polar_hpc.store.resume import resume_index

    run = _open_run(args.run_dir)
    cfg = run.load_config()
    status = run.read_status()
    broken = resume_index(run.shards).problems if run.shards.is_dir() else []
    for problem in broken:
        sys.stderr.write(f"unreadable shard (its sessions run again): {problem}\n")
    if status is not None and status.finished and not broken:
        sys.stdout.write(f"{run.root} already finished ({progress_line(status)}); nothing submitted\n")
        return 0
    jobs = run.read_jobs()
    if status is not None and status.finished:  # what it counted is not all in readable shards any more
        _wait_ended(run, jobs)  # the finished run's components are ending: every one is submitted again
        run.status_path.unlink(missing_ok=True)
    dead = dead_components(run) if jobs else None
    if dead is not None and not dead:
        sys.stdout.write(f"{run.root}: every component is still queued or running; nothing submitted\n")
    else:
        run.cancelled_path.unlink(missing_ok=True)
        submit_run(cfg, run, only=dead)
        sys.stdout.write(f"resumed {run.root}: resubmitted {len(dead) if dead is not None else 'all'} component(s)\n")
    if args.wait:
        code = _follow(run, args.timeout)
        _print_summary(run)
        return code
    return 0


def _wait_ended(run: Any, jobs: Any, timeout_s: float = 60.0) -> None:
    """Wait (bounded) until no component of a finished run is alive any more."""
    import time

    from polar_hpc.launch.monitor import component_states

    deadline = time.monotonic() + timeout_s
    while jobs is not None and time.monotonic() < deadline and any(c.alive for c in component_states(run, jobs)):
        time.sleep(0.5)


def run_doctor(args: argparse.Namespace) -> int:
    """Exit 1 when something the recipe needs is missing (without a recipe nothing is required)."""
    from polar_hpc.config import load_recipe
    from polar_hpc.launch import partition
    from polar_hpc.launch.doctor import diagnose, render

    cfg = load_recipe(args.recipe, args.overrides) if args.recipe else None
    findings = diagnose(cfg)
    if args.node_json:  # what an --on-partition probe job prints
        sys.stdout.write(partition.node_report(findings) + "\n")
        return 0
    findings += partition.check_partitions(cfg)
    if args.on_partition:
        if cfg is None or cfg.launch.backend != "slurm":
            sys.stderr.write("polar-hpc doctor: --on-partition needs a recipe with launch.backend = 'slurm'"
                             f"{'' if cfg is None else f' (it has {cfg.launch.backend!r})'}\n")
            return 2
        recipe = [str(Path(args.recipe).resolve()), *(a for o in args.overrides for a in ("--set", o))]
        findings += partition.probe_partitions(cfg, recipe, timeout_s=args.probe_timeout)
    sys.stdout.write(render(findings) + "\n")
    return 1 if any(f.required and not f.ok for f in findings) else 0
