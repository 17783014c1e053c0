"""The run dir's layout and the readers of its files (wire/rundir.py): the one place the layout is spelled."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar_hpc.config import load_recipe
from polar_hpc.launch.rundir import create_run_dir
from polar_hpc.wire import rundir
from polar_hpc.wire.control import RunStatus
from polar_hpc.wire.endpoints import Endpoint, endpoint_path, read_endpoint, write_endpoint
from polar_hpc.wire.rundir import JobRecord, JobsFile, RunDir, SessionDir, component_name, component_prefix

ROOT = Path(__file__).parents[3]


def test_the_layout_on_disk(tmp_path: Path) -> None:
    """The names other tools and users rely on (docs, `tail -F <run>/logs/...`), checked once against the module."""
    assert (rundir.CONFIG, rundir.SECRETS, rundir.RUN_TOKEN, rundir.CONTROL_KEYS, rundir.ENDPOINTS, rundir.WAITS,
            rundir.LOGS, rundir.LAUNCHER_LOG, rundir.SHARDS, rundir.STATUS, rundir.JOBS, rundir.CANCELLED,
            rundir.CODE, rundir.JOURNAL, rundir.RECORDS, rundir.SESSIONS) == (
        "config.toml", "secrets", "run_token", "control.json", "endpoints", "waits", "logs", "launcher.log",
        "shards", "status.json", "jobs.json", "cancelled.json", "code", "coordinator/journal.jsonl", "records",
        "sessions")
    run = create_run_dir(load_recipe(ROOT / "recipes" / "local-demo.toml"), tmp_path / "r")
    assert sorted(p.name for p in run.root.iterdir()) == sorted(
        [rundir.CONFIG, rundir.SECRETS, rundir.ENDPOINTS, rundir.LOGS, rundir.SHARDS, rundir.CODE])
    assert sorted(p.name for p in run.secrets.iterdir()) == sorted([rundir.RUN_TOKEN, rundir.CONTROL_KEYS])
    assert (run.code / "polar_hpc" / "wire" / "rundir.py").is_file()
    assert run.load_config().launch.run_dir == str(run.root)
    token = run.run_token()
    assert token and len(token) >= 32
    assert run.pid_file("gateway", 3) == run.root / "logs" / "gateway" / "gateway-3.pid"
    assert run.job_logs("gateway") == run.root / "logs" / "gateway" / "%j"
    assert run.sessions(7) == run.root / "sessions" / "rank-00007"
    assert run.proxy_socket(7) == run.root / "sessions" / "proxy-00007.sock"
    session = SessionDir(run.sessions(7) / "s")
    assert (rundir.SESSION_HOME, rundir.SESSION_WORK, rundir.SESSION_LOGS) == ("home", "work", "logs")
    assert session.agent_log("pi") == session.root / "logs" / "agent" / "pi.txt"
    assert (session.harness_log.name, session.prepare_log.name) == ("harness.log", "prepare.log")


def test_component_names() -> None:
    assert component_name("coordinator") == "coordinator"
    assert component_name("inference", 2) == "inference-2"
    assert component_name("inference", 2).startswith(component_prefix("inference"))
    job = JobRecord(component="gateway", index=4, job_id="9", backend="local", folder="f", submitted_at=0.0)
    assert job.name == "gateway-4" == component_name("gateway", 4)


def test_status_is_none_until_written_and_when_unreadable(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    assert run.read_status() is None
    run.status_path.write_text("{not json")
    assert run.read_status() is None
    run.status_path.write_text('{"tasks": "many"}')
    assert run.read_status() is None
    status = RunStatus(run_name="r", tasks=3, tasks_completed=1, sessions={"committed": 2}, finished=True)
    run.write_status(status)
    assert run.read_status() == status


def test_jobs_cancel_and_token_files(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    assert run.read_jobs() is None and run.cancelled() is None and run.run_token() is None
    jobs = JobsFile(backend="slurm", jobs=[JobRecord(component="inference", index=0, job_id="12_1",
                                                     backend="slurm", folder="x", submitted_at=1.5)])
    run.write_jobs(jobs)
    assert run.read_jobs() == jobs
    run.mark_cancelled(grace_s=7.0)
    cancelled = run.cancelled()
    assert cancelled is not None and cancelled.grace_s == 7.0
    run.cancelled_path.write_text("[]")
    assert run.cancelled() is None
    with pytest.raises(FileNotFoundError, match="not a polar-hpc run directory"):
        run.load_config()


def test_an_endpoint_is_none_until_published_and_a_bad_one_is_named(tmp_path: Path) -> None:
    assert read_endpoint(tmp_path, "coordinator") is None
    ep = Endpoint(name="coordinator", url="tcp://h:1", pid=1, host="h", started_at=0.0)
    write_endpoint(tmp_path, ep)
    assert endpoint_path(tmp_path, "coordinator") == RunDir(tmp_path).endpoints / "coordinator.json"
    assert read_endpoint(tmp_path, "coordinator") == ep
    endpoint_path(tmp_path, "coordinator").write_text("{")
    with pytest.raises(ValueError, match="does not hold an Endpoint"):
        read_endpoint(tmp_path, "coordinator")


def test_no_other_module_spells_the_run_dirs_file_names() -> None:
    """The file names of the run dir are wire/rundir.py's; a string literal of one elsewhere in the package is a
    second spelling (the folder names are common words, so only the file names are checked)."""
    import ast

    names = {rundir.CONFIG, rundir.STATUS, rundir.JOBS, rundir.CANCELLED, rundir.RUN_TOKEN, rundir.CONTROL_KEYS,
             rundir.LAUNCHER_LOG, rundir.JOURNAL, "journal.jsonl", "harness.log", "prepare.log"}
    package = ROOT / "polar_hpc"
    found = []
    for path in sorted(package.rglob("*.py")):
        if path == package / "wire" / "rundir.py":
            continue
        text = path.read_text()
        if not any(n in text for n in names):
            continue
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not found, "use the constants of polar_hpc/wire/rundir.py:\n  " + "\n  ".join(found)
