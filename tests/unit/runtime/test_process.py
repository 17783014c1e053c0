from __future__ import annotations

import asyncio
import functools
import os
from pathlib import Path

import pytest

from polar_hpc.runtime import process
from polar_hpc.runtime.process import descendants, run_command
from polar_hpc.util import proc
from tests.fixtures.waits import async_wait_for
from tests.unit.runtime.conftest import pids_with

ENV = {"PATH": os.environ["PATH"]}


async def test_output_exit_code_and_log(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "x.txt"
    res = await run_command(["sh", "-c", "echo out; echo err >&2; exit 3"], env=ENV, log_path=log)
    assert (res.returncode, res.stdout, res.stderr, res.timed_out) == (3, "out\n", "err\n", False)
    assert sorted(log.read_text().split()) == ["err", "out"]


async def test_timeout_kills_whole_tree(marker: str) -> None:
    res = await run_command(
        ["sh", "-c", f"sleep {marker} & (sleep {marker} &) ; sh -c 'sleep {marker}'; echo never"],
        env=ENV,
        timeout_s=0.5,
    )
    assert res.timed_out and res.returncode < 0 and "never" not in res.stdout
    assert pids_with(marker) == []


async def test_term_ignoring_tree_gets_sigkill(marker: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "kill_tree", functools.partial(proc.kill_tree, grace_s=0.5))  # not 3 s each run
    res = await run_command(
        ["sh", "-c", f"trap '' TERM; sh -c \"trap '' TERM; sleep {marker}\""], env=ENV, timeout_s=0.3
    )
    assert res.timed_out
    assert pids_with(marker) == []


async def test_background_leftovers_do_not_hold_exec(marker: str) -> None:
    res = await asyncio.wait_for(run_command(["sh", "-c", f"(sleep {marker} &); echo bg"], env=ENV), 10)
    assert res.stdout == "bg\n" and not res.timed_out
    assert pids_with(marker) == []


async def test_cancel_kills_tree(marker: str) -> None:
    live: set[int] = set()
    task = asyncio.create_task(run_command(["sh", "-c", f"sleep {marker} & sleep {marker}"], env=ENV, live=live))
    await async_wait_for(lambda: bool(live) and len(descendants(next(iter(live)))) >= 2, 2, "two sleeps started")
    assert len(pids_with(marker)) >= 2
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert pids_with(marker) == [] and live == set()
