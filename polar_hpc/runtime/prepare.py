"""``RuntimeSpec.prepare``: shell commands run in a started sandbox before the harness, with retries."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from polar_hpc.log import get_logger
from polar_hpc.runtime.base import ExecResult, PrepareError, Runtime

log = get_logger("runtime")


async def run_prepare(
    runtime: Runtime,
    commands: list[str],
    *,
    retries: int = 2,
    backoff_s: float = 2.0,
    max_backoff_s: float = 30.0,
    timeout_s: float | None = None,
    log_path: Path | None = None,
) -> list[ExecResult]:
    """Run each command in order, retrying a failing one ``retries`` times with doubling backoff.

    ``timeout_s`` bounds all of it together (one deadline); raises ``PrepareError`` with the last result.
    """
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    results: list[ExecResult] = []
    for i, cmd in enumerate(commands):
        delay = backoff_s
        for attempt in range(retries + 1):
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise PrepareError(f"prepare[{i}] {cmd!r}: no time left of the {timeout_s}s prepare budget")
            res = await runtime.exec(cmd, timeout_s=left, log_path=log_path)
            if res.ok:
                results.append(res)
                break
            what = "timed out" if res.timed_out else f"exit {res.returncode}"
            if attempt == retries or res.timed_out:
                raise PrepareError(
                    f"prepare[{i}] {cmd!r}: {what} after {attempt + 1} attempt(s); stderr: {res.stderr.strip()[-500:]}",
                    res,
                )
            log.warning("prepare[%d] %r: %s (attempt %d/%d), retrying in %.1fs", i, cmd, what, attempt + 1,
                        retries + 1, delay)
            wait = delay if deadline is None else min(delay, max(0.0, deadline - time.monotonic()))
            await asyncio.sleep(wait)
            delay = min(delay * 2, max_backoff_s)
    return results
