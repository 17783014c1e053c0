"""polar_hpc.util: atomic private writes and pid-safe process-tree handling, on real files and processes."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from polar_hpc.util.fs import write_atomic
from polar_hpc.util.proc import (
    alive,
    read_pid_file,
    same_process,
    start_time,
    stop_tree,
    write_pid_file,
)
from tests.fixtures.waits import wait_for
from tests.unit.runtime.conftest import pids_with


def test_write_atomic_mode_ignores_umask_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "secret"
    old = os.umask(0)
    try:
        write_atomic(path, b"one", 0o600)
        write_atomic(path, b"two" * 100000, 0o600)
    finally:
        os.umask(old)
    assert path.read_bytes() == b"two" * 100000
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["secret"]


def test_pid_file_names_one_process_not_a_reused_pid(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        write_pid_file(tmp_path / "x.pid", proc.pid)
        record = read_pid_file(tmp_path / "x.pid")
        assert record == (proc.pid, start_time(proc.pid))
        assert same_process(*record)
        assert not same_process(proc.pid, record[1] + 1)  # same pid, another start time: a reused pid
        assert not same_process(proc.pid, None)
    finally:
        proc.kill()
        proc.wait()
    assert not alive(proc.pid) and not same_process(*record)
    (tmp_path / "old.pid").write_text("123")
    assert read_pid_file(tmp_path / "old.pid") == (123, None)
    assert read_pid_file(tmp_path / "missing.pid") is None


def test_stop_tree_root_first_then_its_leftovers(marker: str) -> None:
    """term_all=False: only the root gets SIGTERM while it drains; what it leaves behind is killed after."""
    proc = subprocess.Popen(["sh", "-c", f"sleep {marker} & trap 'exit 0' TERM; while :; do sleep 0.05; done"])
    wait_for(lambda: bool(pids_with(marker)), 10, "the sleep to start")
    assert pids_with(marker)
    t0 = time.monotonic()
    assert stop_tree(proc.pid, grace_s=10, term_all=False)
    assert time.monotonic() - t0 < 8
    assert proc.wait(timeout=5) == 0
    assert pids_with(marker) == []


def test_stop_tree_kills_what_ignores_sigterm(marker: str) -> None:
    proc = subprocess.Popen(["sh", "-c", f"trap '' TERM; sleep {marker}"])
    wait_for(lambda: bool(pids_with(marker)), 10, "the sleep to start")
    assert not stop_tree(proc.pid, grace_s=0.3)
    proc.wait(timeout=5)
    wait_for(lambda: not pids_with(marker), 5, "the killed sleep to go")
    assert pids_with(marker) == []
