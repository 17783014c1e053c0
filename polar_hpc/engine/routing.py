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
    """Servers are handed out as :class:`ServerState` objects, never as indices: :meth:`set_urls` may replace
    the list while a call holds a server (it waits in a retry backoff), and the held state stays valid."""

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
        self._sticky: OrderedDict[str, str] = OrderedDict()
        """session id → URL of its server (a URL, not an index, so it survives :meth:`set_urls`)."""

    def choose(self, session_id: str | None, exclude: frozenset[str] = frozenset()) -> ServerState:
        """The server for the next attempt; ``exclude`` holds the URLs of servers that failed this call."""
        now = time.monotonic()
        servers = list(self.servers)
        if session_id is not None:
            url = self._sticky.get(session_id)
            if url is not None and url not in exclude:
                for s in servers:
                    if s.url == url and s.is_up(now):
                        self._sticky.move_to_end(session_id)
                        return s
        candidates = [s for s in servers if s.url not in exclude and s.is_up(now)]
        if not candidates:
            candidates = [s for s in servers if s.is_up(now)]
        if candidates:
            chosen = min(candidates, key=lambda s: (s.inflight, s.failures))
        else:
            chosen = min(servers, key=lambda s: s.down_until)
        if session_id is not None:
            self._sticky[session_id] = chosen.url
            self._sticky.move_to_end(session_id)
            while len(self._sticky) > self.max_sessions:
                self._sticky.popitem(last=False)
        return chosen

    def set_urls(self, urls: list[str]) -> bool:
        """Replace the server list (servers requeued elsewhere publish new endpoints); known servers keep their
        state. Returns whether anything changed."""
        urls = [u.rstrip("/") for u in urls]
        if not urls or urls == [s.url for s in self.servers]:
            return False
        known = {s.url: s for s in self.servers}
        self.servers = [known.get(u) or ServerState(url=u) for u in urls]
        kept = set(urls)
        for sid in [sid for sid, u in self._sticky.items() if u not in kept]:
            del self._sticky[sid]
        return True

    @staticmethod
    def wait_s(server: ServerState) -> float:
        """Seconds until ``server`` is up again (0 when it is up)."""
        return max(0.0, server.down_until - time.monotonic())

    @staticmethod
    def mark_ok(server: ServerState) -> None:
        server.failures = 0
        server.down_until = 0.0

    def mark_failed(self, server: ServerState, error: str) -> None:
        """Count a failure of ``server`` (a state from :meth:`choose`; one dropped by :meth:`set_urls` since is
        updated harmlessly)."""
        s = server
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
