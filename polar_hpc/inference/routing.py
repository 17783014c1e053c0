"""Choosing a server for a request: health-aware, least-loaded, sticky per session.

A session keeps its server while that server is healthy, so SGLang's radix (prefix) cache serves the
growing prompt of a multi-turn session. A server that fails (connection error, 5xx) is marked down for a
cooldown that doubles on repeated failures; when every server is down, the one that comes back first is
tried anyway rather than failing fast.
"""

from __future__ import annotations

import time
from collections import OrderedDict

import msgspec


class ServerState(msgspec.Struct, kw_only=True):
    url: str
    inflight: int = 0
    failures: int = 0
    down_until: float = 0.0
    """``time.monotonic()`` before which the server is not chosen while another one is up."""
    last_error: str = ""

    def is_up(self, now: float) -> bool:
        return now >= self.down_until


class ServerPool:
    def __init__(
        self,
        urls: list[str],
        *,
        base_cooldown_s: float = 0.5,
        max_cooldown_s: float = 30.0,
        max_sessions: int = 100_000,
    ) -> None:
        if not urls:
            raise ValueError("ServerPool needs at least one server URL, got none")
        self.servers = [ServerState(url=u.rstrip("/")) for u in urls]
        self.base_cooldown_s = base_cooldown_s
        self.max_cooldown_s = max_cooldown_s
        self.max_sessions = max_sessions
        self._sticky: OrderedDict[str, int] = OrderedDict()

    def choose(self, session_id: str | None, exclude: frozenset[int] = frozenset()) -> int:
        """Index of the server for the next attempt; ``exclude`` holds servers that failed this call."""
        now = time.monotonic()
        if session_id is not None:
            idx = self._sticky.get(session_id)
            if idx is not None and idx not in exclude and self.servers[idx].is_up(now):
                self._sticky.move_to_end(session_id)
                return idx
        candidates = [i for i, s in enumerate(self.servers) if i not in exclude and s.is_up(now)]
        if not candidates:
            candidates = [i for i, s in enumerate(self.servers) if s.is_up(now)]
        if candidates:
            idx = min(candidates, key=lambda i: (self.servers[i].inflight, self.servers[i].failures))
        else:
            idx = min(range(len(self.servers)), key=lambda i: self.servers[i].down_until)
        if session_id is not None:
            self._sticky[session_id] = idx
            self._sticky.move_to_end(session_id)
            while len(self._sticky) > self.max_sessions:
                self._sticky.popitem(last=False)
        return idx

    def set_urls(self, urls: list[str]) -> bool:
        """Replace the server list (servers requeued elsewhere publish new endpoints); known servers keep their
        state. Returns whether anything changed."""
        urls = [u.rstrip("/") for u in urls]
        if not urls or urls == [s.url for s in self.servers]:
            return False
        known = {s.url: s for s in self.servers}
        self.servers = [known.get(u) or ServerState(url=u) for u in urls]
        self._sticky.clear()
        return True

    def wait_s(self, idx: int) -> float:
        """Seconds until server ``idx`` is up again (0 when it is up)."""
        return max(0.0, self.servers[idx].down_until - time.monotonic())

    def mark_ok(self, idx: int) -> None:
        s = self.servers[idx]
        s.failures = 0
        s.down_until = 0.0

    def mark_failed(self, idx: int, error: str) -> None:
        s = self.servers[idx]
        s.failures += 1
        s.last_error = error
        cooldown = min(self.max_cooldown_s, self.base_cooldown_s * 2 ** (s.failures - 1))
        s.down_until = time.monotonic() + cooldown

    def forget(self, session_id: str) -> None:
        self._sticky.pop(session_id, None)

    def describe(self) -> str:
        now = time.monotonic()
        parts = []
        for s in self.servers:
            state = "up" if s.is_up(now) else f"down {s.down_until - now:.1f}s"
            err = f", last error: {s.last_error}" if s.last_error else ""
            parts.append(f"{s.url} ({state}, {s.failures} failures{err})")
        return "; ".join(parts)
