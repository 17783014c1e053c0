"""The attempts of one engine call: which server next, the backoff before it, the deadline, and the error that names
every failure when none succeeded. Shared by ``generate``, ``teacher_force`` and the streamed ``open_stream``."""

from __future__ import annotations

import asyncio
import time

from polar_hpc.engine.errors import EngineError, EngineTimeout, EngineUnavailable
from polar_hpc.engine.routing import ServerPool, ServerState
from polar_hpc.log import get_logger

log = get_logger("engine")


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

    def __aiter__(self) -> _Attempt:
        return _Attempt(self)

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


class _Attempt:
    """The iteration of :class:`Attempts`. An iterator object, not an async generator: a caller that returns from
    inside its ``async for`` (every call that succeeds) leaves no unfinished generator for the event loop to
    close (``call_soon_threadsafe`` of an ``aclose`` task: a self-pipe write, a wake-up and a task per call)."""

    def __init__(self, attempts: Attempts) -> None:
        self.a = attempts
        self.attempt = 0
        self.done = False

    def __aiter__(self) -> _Attempt:
        return self

    async def __anext__(self) -> tuple[int, ServerState, float]:
        a = self.a
        self.attempt += 1
        attempt = self.attempt
        remaining = a.deadline - time.monotonic()
        if self.done or attempt > a.max_retries + 1 or remaining <= 0:
            self.done = True
            raise StopAsyncIteration
        server = a.pool.choose(a.session_id, frozenset(a.tried))
        wait = a.pool.wait_s(server)
        if attempt > 1:
            wait = max(wait, min(a.max_backoff_s, a.backoff_s * 2 ** (attempt - 2)))
        if wait > 0:
            await asyncio.sleep(min(wait, max(0.0, remaining)))
            remaining = a.deadline - time.monotonic()
            if remaining <= 0:
                self.done = True
                raise StopAsyncIteration
            if all(s is not server for s in a.pool.servers):  # set_urls dropped it while we waited
                server = a.pool.choose(a.session_id, frozenset(a.tried))
        return attempt, server, remaining
