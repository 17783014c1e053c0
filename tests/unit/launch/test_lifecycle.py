"""Run dir privacy, pid-safe cancel, stopping a component's whole tree, and progress reported by callback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from polar_hpc.config import load_recipe
from polar_hpc.launch.jobs import ComponentJob
from polar_hpc.launch.monitor import cancel_run, component_states, wait_run
from polar_hpc.launch.rundir import create_run_dir
from polar_hpc.util.proc import alive, start_time, write_pid_file
from polar_hpc.wire.control import RunStatus
from polar_hpc.wire.rundir import CONTROL_KEYS, JobRecord, JobsFile, RunDir
from tests.fixtures.waits import wait_for

ROOT = Path(__file__).parents[3]


def test_run_dir_is_private_whatever_the_umask(tmp_path: Path) -> None:
    cfg = load_recipe(ROOT / "recipes" / "local-demo.toml")
    old = os.umask(0o022)
    try:
        run = create_run_dir(cfg, tmp_path / "runs" / "r1")
    finally:
        os.umask(old)
    assert run.root.stat().st_mode & 0o777 == 0o700
    assert run.secrets.stat().st_mode & 0o777 == 0o700
    for path in (run.run_token_path, run.secrets / CONTROL_KEYS):
        assert path.stat().st_mode & 0o777 == 0o600


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"])


def _local_run(tmp_path: Path, jobs: list[JobRecord]) -> RunDir:
    run = RunDir(tmp_path / "run")
    for component in ("coordinator", "gateway"):
        run.logs(component).mkdir(parents=True, exist_ok=True)
    run.write_jobs(JobsFile(backend="local", jobs=jobs))
    return run


def _job(component: str, index: int, job_id: int, tmp_path: Path, pid_start: int | None = None) -> JobRecord:
    return JobRecord(component=component, index=index, job_id=str(job_id), backend="local",  # type: ignore[arg-type]
                     folder=str(tmp_path), submitted_at=0.0, pid_start=pid_start)


def test_cancel_never_signals_a_pid_that_is_no_longer_ours(tmp_path: Path) -> None:
    """Pid files and job ids naming unrelated live processes (pid reuse) are left alone; our component is not."""
    reused, old_format, controller, ours = _sleeper(), _sleeper(), _sleeper(), _sleeper()
    try:
        run = _local_run(tmp_path, [
            _job("gateway", 0, controller.pid, tmp_path),  # old ledger: no start time, cmdline lacks the run dir
            _job("gateway", 1, 2**22 + 7, tmp_path),
            _job("coordinator", 0, 2**22 + 9, tmp_path),
        ])
        started = start_time(reused.pid)
        assert started is not None
        # the recorded process ended and its pid now belongs to someone else: the start time differs
        run.pid_file("gateway", 0).write_text(f"{reused.pid} {started - 1}")
        run.pid_file("gateway", 1).write_text(str(old_format.pid))  # old one-field file
        write_pid_file(run.pid_file("coordinator", 0), ours.pid)
        states = {(c.component, c.index): c.alive for c in component_states(run, run.read_jobs())}  # type: ignore[arg-type]
        assert states == {("gateway", 0): False, ("gateway", 1): False, ("coordinator", 0): True}
        cancel_run(run, grace_s=5)
        assert ours.wait(timeout=5) == -signal.SIGTERM
        for proc in (reused, old_format, controller):
            assert proc.poll() is None and alive(proc.pid)
    finally:
        for proc in (reused, old_format, controller, ours):
            proc.kill()
            proc.wait()


def test_stop_child_kills_the_components_whole_tree(tmp_path: Path) -> None:
    marker = f"{900 + os.getpid() % 97}.{time.time_ns() % 10**6:06d}"
    job = ComponentJob(str(tmp_path), "gateway", 0, stop_grace_s=5)
    # a component whose own child outlives it (no trap: sh dies on SIGTERM, the sleep is orphaned)
    job._child = subprocess.Popen(["sh", "-c", f"sleep {marker} & wait"])

    def grandchildren() -> list[int]:
        out = []
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    cmd = Path(f"/proc/{entry.name}/cmdline").read_bytes()
                    if cmd.startswith(b"sleep\0") and marker.encode() in cmd and alive(int(entry.name)):
                        out.append(int(entry.name))
                except OSError:
                    pass
        return out

    wait_for(lambda: bool(grandchildren()), 10, "the sleep to start")  # not sh alone: it must have forked
    job._stop_child()
    assert job._child.poll() is not None
    wait_for(lambda: not grandchildren(), 5, "the grandchildren to go")


def test_wait_run_reports_through_the_callback_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = RunDir(tmp_path / "run")
    run.root.mkdir()
    lines: list[str] = []
    assert wait_run(run, timeout_s=0.05, interval_s=0.01, report=lines.append) == 124
    assert lines[0].startswith("waiting for the coordinator") and "gave up waiting" in lines[-1]
    assert wait_run(run, timeout_s=0.01, interval_s=0.01) == 124
    assert capsys.readouterr().err == ""


def test_cli_wait_prints_progress_to_stderr(tmp_path: Path) -> None:
    script = ("import sys; from polar_hpc.cli import launch as cli; from polar_hpc.launch.monitor import wait_run;"
              "from polar_hpc.wire.rundir import RunDir;"
              f"sys.exit(wait_run(RunDir({str(tmp_path)!r}), timeout_s=0.05, interval_s=0.01, report=cli._report))")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert res.returncode == 124 and "gave up waiting" in res.stderr


def test_wait_run_exits_1_naming_the_cause_when_every_gateway_is_gone(tmp_path: Path) -> None:
    coordinator = _sleeper()
    try:
        run = _local_run(tmp_path, [_job("coordinator", 0, 2**22 + 9, tmp_path),
                                    _job("gateway", 0, 2**22 + 11, tmp_path), _job("gateway", 1, 2**22 + 13, tmp_path)])
        write_pid_file(run.pid_file("coordinator", 0), coordinator.pid)
        lines: list[str] = []
        assert wait_run(run, timeout_s=30, interval_s=0.01, report=lines.append, confirm_s=0.05) == 1
        assert lines[-1] == (f"every gateway rank ended (gateway-0 ENDED, gateway-1 ENDED) before the run finished; "
                             f"logs: {tmp_path.parent}")
        run.mark_cancelled(5.0)
        assert wait_run(run, timeout_s=30, interval_s=0.01, report=lines.append) == 1
        assert (lines[-1].startswith("the run was cancelled at ")
                and lines[-1].endswith(f"(polar-hpc resume {run.root} to go on)"))
    finally:
        coordinator.kill()
        coordinator.wait()


def _polar(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "polar_hpc", *args], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)


def test_resume_of_a_finished_run_submits_nothing(tmp_path: Path) -> None:
    import msgspec

    from polar_hpc.wire.control import RunStatus

    run = create_run_dir(load_recipe(ROOT / "recipes" / "local-shell.toml"), tmp_path / "run")
    run.write_jobs(JobsFile(backend="local", jobs=[_job("coordinator", 0, 2**22 + 9, tmp_path)]))
    run.status_path.write_bytes(msgspec.json.encode(RunStatus(sessions={"committed": 6}, finished=True)))
    before = run.jobs_path.read_bytes()
    out = _polar("resume", str(run.root))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"{run.root} already finished (sessions 6/6 ") and out.stdout.endswith(
        "; nothing submitted\n")
    assert run.jobs_path.read_bytes() == before


def test_status_after_cancel_says_cancelled_with_what_was_committed(tmp_path: Path) -> None:
    run = create_run_dir(load_recipe(ROOT / "recipes" / "local-shell.toml"), tmp_path / "run")
    run.write_jobs(JobsFile(backend="local", jobs=[_job("coordinator", 0, 2**22 + 9, tmp_path)]))
    out = _polar("cancel", str(run.root), "--grace", "5")
    assert (out.returncode, out.stdout) == (0, f"cancelled {run.root}: 0 sessions committed in 0 shard(s)\n")
    out = _polar("status", str(run.root))
    last = out.stdout.splitlines()[-1]
    assert last.startswith("cancelled at ") and last.endswith(": 0 sessions committed in 0 shard(s)"), out.stdout


def _trapping(stamp: Path, delay_s: float) -> subprocess.Popen[bytes]:
    """A component that, on SIGTERM, waits ``delay_s`` (its drain), writes when it ended to ``stamp`` and exits."""
    script = f'trap "sleep {delay_s}; date +%s.%N > {stamp}; exit 0" TERM; while :; do sleep 0.05; done'
    return subprocess.Popen(["sh", "-c", script])


def test_cancel_stops_the_gateways_before_the_coordinator_and_inference(tmp_path: Path) -> None:
    procs = {"gateway": _trapping(tmp_path / "gateway", 1.0), "coordinator": _trapping(tmp_path / "coordinator", 0),
             "inference": _trapping(tmp_path / "inference", 0)}
    try:
        run = _local_run(tmp_path, [_job(c, 0, 2**22 + i, tmp_path) for i, c in enumerate(procs)])
        run.logs("inference").mkdir(parents=True, exist_ok=True)
        time.sleep(0.2)  # the shells set their traps
        for component, p in procs.items():
            write_pid_file(run.pid_file(component, 0), p.pid)
        assert cancel_run(run, grace_s=20)
        for p in procs.values():
            assert p.wait(timeout=5) == 0, "each component ended by its own SIGTERM handler, none killed"
        ended = {c: float((tmp_path / c).read_text()) for c in procs}
        assert ended["gateway"] <= ended["coordinator"] and ended["gateway"] <= ended["inference"]
        assert run.cancelled() is not None
    finally:
        for p in procs.values():
            p.kill()
            p.wait()


def test_cancel_of_a_finished_run_changes_nothing(tmp_path: Path) -> None:
    coordinator = _sleeper()
    try:
        run = _local_run(tmp_path, [_job("coordinator", 0, 2**22 + 9, tmp_path)])
        write_pid_file(run.pid_file("coordinator", 0), coordinator.pid)
        run.write_status(RunStatus(run_name="r", finished=True))
        assert cancel_run(run, grace_s=5) is False
        assert run.cancelled() is None and coordinator.poll() is None
    finally:
        coordinator.kill()
        coordinator.wait()


def test_an_inference_server_that_keeps_dying_stops_the_run_saying_why(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Restarted INFERENCE_RESTARTS times, the server dies once more: the job stops the run as a cancel does
    (the coordinator gets SIGTERM), spares itself, fails, and `status` / `--wait` say why."""
    from polar_hpc.launch import jobs

    run = create_run_dir(load_recipe(ROOT / "recipes" / "local-demo.toml"), tmp_path / "run")
    coordinator = _sleeper()
    starts: list[int] = []

    def dying(run: RunDir, component: str, index: int) -> list[str]:
        starts.append(index)
        return [sys.executable, "-c", "raise SystemExit(3)"]

    monkeypatch.setattr(jobs, "component_argv", dying)
    monkeypatch.setattr(jobs, "POLL_S", 0.05)
    try:
        run.logs("coordinator").mkdir(parents=True, exist_ok=True)
        run.write_jobs(JobsFile(backend="local", jobs=[_job("coordinator", 0, 2**22 + 9, tmp_path),
                                                       _job("inference", 0, 2**22 + 11, tmp_path)]))
        write_pid_file(run.pid_file("coordinator", 0), coordinator.pid)
        with pytest.raises(RuntimeError, match="inference-0 exited with status 3"):
            jobs.ComponentJob(str(run.root), "inference", 0, stop_grace_s=5)()
        assert len(starts) == jobs.INFERENCE_RESTARTS + 1
        assert coordinator.wait(timeout=10) == -signal.SIGTERM
        stopped = run.cancelled()
        assert stopped is not None and stopped.reason.startswith(
            f"inference-0 exited with status 3, restarted {jobs.INFERENCE_RESTARTS} times already"), stopped
        lines: list[str] = []
        assert wait_run(run, timeout_s=5, interval_s=0.01, report=lines.append) == 1
        assert lines[-1].startswith("the run was stopped at ") and stopped.reason in lines[-1], lines
        last = _polar("status", str(run.root)).stdout.splitlines()[-1]
        assert last.startswith("stopped at ") and stopped.reason in last, last
    finally:
        coordinator.kill()
        coordinator.wait()


def test_wait_run_exits_1_when_every_inference_server_ended(tmp_path: Path) -> None:
    coordinator, gateway = _sleeper(), _sleeper()
    try:
        run = _local_run(tmp_path, [_job("coordinator", 0, 2**22 + 9, tmp_path),
                                    _job("gateway", 0, 2**22 + 11, tmp_path),
                                    _job("inference", 0, 2**22 + 13, tmp_path)])
        write_pid_file(run.pid_file("coordinator", 0), coordinator.pid)
        write_pid_file(run.pid_file("gateway", 0), gateway.pid)
        lines: list[str] = []
        assert wait_run(run, timeout_s=30, interval_s=0.01, report=lines.append, confirm_s=0.05) == 1
        assert lines[-1] == (f"every inference server ended (inference-0 ENDED) before the run finished; logs: "
                             f"{tmp_path.parent} (polar-hpc resume submits them again)")
    finally:
        for p in (coordinator, gateway):
            p.kill()
            p.wait()


def test_a_lost_job_that_keeps_getting_lost_stops_the_run_from_the_coordinators_job(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's monitor (the coordinator job's ``watch``) says the budget is spent: the job stops the run as a
    cancel does (the gateway gets SIGTERM first), spares itself until then, stops its coordinator, fails, and
    `status` / `--wait` say why."""
    from polar_hpc.launch import jobs

    run = create_run_dir(load_recipe(ROOT / "recipes" / "local-demo.toml"), tmp_path / "run")
    gateway = _sleeper()
    reason = "gateway-0 job 7_0 ended NODE_FAIL, resubmitted 3 times already (RESUBMITS 3); giving up"
    calls: list[int] = []

    def watch() -> str | None:
        calls.append(1)
        return reason if len(calls) >= 2 else None

    monkeypatch.setattr(jobs, "component_argv", lambda run, component, index: ["sleep", "60"])
    monkeypatch.setattr(jobs, "POLL_S", 0.05)
    try:
        run.logs("coordinator").mkdir(parents=True, exist_ok=True)
        run.write_jobs(JobsFile(backend="local", jobs=[_job("coordinator", 0, 2**22 + 9, tmp_path),
                                                       _job("gateway", 0, 2**22 + 13, tmp_path)]))
        write_pid_file(run.pid_file("gateway", 0), gateway.pid)
        with pytest.raises(RuntimeError, match=r"coordinator-0 stopped the run: gateway-0 job 7_0 ended NODE_FAIL"):
            ComponentJob(str(run.root), "coordinator", 0, stop_grace_s=5, watch=watch)()
        assert gateway.wait(timeout=10) == -signal.SIGTERM
        stopped = run.cancelled()
        assert stopped is not None and stopped.reason == reason
        lines: list[str] = []
        assert wait_run(run, timeout_s=5, interval_s=0.01, report=lines.append) == 1
        assert lines[-1].startswith("the run was stopped at ") and reason in lines[-1], lines
    finally:
        gateway.kill()
        gateway.wait()


def test_a_failing_monitor_never_ends_the_coordinators_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from polar_hpc.launch import jobs

    run = create_run_dir(load_recipe(ROOT / "recipes" / "local-demo.toml"), tmp_path / "run")

    def watch() -> str | None:
        raise OSError("sacct: Connection refused")

    monkeypatch.setattr(jobs, "component_argv", lambda run, component, index: ["sleep", "0.5"])
    monkeypatch.setattr(jobs, "POLL_S", 0.05)  # the monitor fails at each of ~10 polls
    assert ComponentJob(str(run.root), "coordinator", 0, stop_grace_s=5, watch=watch)() == 0
    assert run.cancelled() is None
