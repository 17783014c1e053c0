"""stop_process: the server's whole process group goes (SGLang's scheduler and TP workers are its children)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from polar_hpc.util.readiness import stop_process
from tests.fixtures.waits import wait_for

_PARENT = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", sys.argv[1]])
print(child.pid, flush=True)
child.wait()
"""
_CHILD_IGNORING_TERM = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _start(child_code: str) -> tuple[subprocess.Popen[bytes], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _PARENT, child_code], stdout=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    proc.stdout.close()
    return proc, child


def test_stop_process_terminates_children_of_the_group() -> None:
    proc, child = _start("import time; time.sleep(120)")
    try:
        assert _alive(child)
        stop_process(proc, grace_s=5.0)
        wait_for(lambda: not _alive(child), 5.0, f"child {child} to end")
        assert not _alive(child)
    finally:
        if _alive(child):
            os.kill(child, 9)


def test_stop_process_kills_children_that_ignore_sigterm() -> None:
    proc, child = _start(_CHILD_IGNORING_TERM)
    try:
        time.sleep(0.5)  # the child has installed its handler
        t0 = time.monotonic()
        stop_process(proc, grace_s=1.0)
        wait_for(lambda: not _alive(child), 5.0, f"child {child} to end")
        assert not _alive(child) and time.monotonic() - t0 < 6.0
    finally:
        if _alive(child):
            os.kill(child, 9)


def test_stop_process_outside_a_group_signals_only_the_process() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    assert stop_process(proc, grace_s=5.0) == -15
