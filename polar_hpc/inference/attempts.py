"""The attempts of one engine call: which server next, the backoff before it, the deadline, and the error that names
every failure when none succeeded. Shared by ``generate``, ``teacher_force`` and the streamed ``open_stream``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from polar_hpc.inference.errors import EngineError, EngineTimeout, EngineUnavailable
from polar_hpc.inference.routing import ServerPool, ServerState
from polar_hpc.log import get_logger

log = get_logger("inference.engine")


class Attempts:
    """``async for attempt, server, remaining in Attempts(...)``: up to ``max_retries + 1`` attempts before
    ``deadline`` (``time.monotonic()``), each on a server not yet failed in this call when there is one, after the
    pool's wait for that server and, from the second attempt, exponential backoff. Report a failed attempt with
    :meth:`failed`; after the loop, ``raise attempts.exhausted()``."""

    def __init__(self, pool: ServerPool, what: str, *, session_id: str | None, deadline: float, max_retries: int,
                 backoff_s: float, max_backoff_s: float) -> None:
        self.pool = pool
        self.what = what
        self.session_id = session_id
        self.deadline = deadline
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.tried: set[str] = set()
        self.errors: list[str] = []

    async def __aiter__(self) -> AsyncIterator[tuple[int, ServerState, float]]:
        for attempt in range(1, self.max_retries + 2):
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                return
            server = self.pool.choose(self.session_id, frozenset(self.tried))
            wait = self.pool.wait_s(server)
            if attempt > 1:
                wait = max(wait, min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 2)))
            if wait > 0:
                await asyncio.sleep(min(wait, max(0.0, remaining)))
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    return
                if all(s is not server for s in self.pool.servers):  # set_urls dropped it while we waited
                    server = self.pool.choose(self.session_id, frozenset(self.tried))
            yield attempt, server, remaining

    def failed(self, attempt: int, server: ServerState, rid: str, msg: str) -> None:
        """Attempt ``attempt`` at ``server`` failed in a way another server may not (connection, 5xx)."""
        self.pool.mark_failed(server, msg)
        self.tried.add(server.url)
        self.errors.append(f"attempt {attempt} at {server.url} (rid {rid}): {msg}")
        log.warning("%s attempt %d at %s failed: %s", self.what, attempt, server.url, msg)

    def exhausted(self) -> EngineError:
        """The error once the loop ended without a result: the deadline passed, or every attempt failed."""
        if time.monotonic() >= self.deadline:
            return EngineTimeout(
                f"{self.what} passed its deadline after {len(self.errors)} failed attempt(s); "
                f"servers: {self.pool.describe()}" + (f"; last error: {self.errors[-1]}" if self.errors else "")
            )
        return EngineUnavailable(
            f"{self.what} failed on every attempt ({len(self.errors)}): " + " | ".join(self.errors[-4:])
        )
