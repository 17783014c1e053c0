"""The coordinator's queue of pending session keys: FIFO, a key requeued at the front, O(1) removal by key.

A ``deque.remove`` scans the queue: a restarted coordinator adopting the sessions its ranks still hold removed each
of them that way, O(pending) per key (64 ranks × 1,024 held sessions: 65,536 scans of a 65,536-key queue). Here a
removal only forgets the key's ticket; the entry it leaves in the order is skipped when reached, and the order is
compacted once it holds more dead entries than live ones.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Iterator

COMPACT_MIN = 1024
"""Dead entries tolerated before the order is compacted (below this, compacting costs more than it saves)."""


class PendingQueue:
    """Keys in dispatch order. Iteration, ``len`` and truth see the live keys only, each once."""

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._order: deque[tuple[str, int]] = deque()
        self._live: dict[str, int] = {}
        """Key -> its ticket: the order entry carrying that ticket is the key's one live place."""
        self._tickets = itertools.count()
        for key in keys:
            self.append(key)

    def __len__(self) -> int:
        return len(self._live)

    def __bool__(self) -> bool:
        return bool(self._live)

    def __contains__(self, key: object) -> bool:
        return key in self._live

    def __iter__(self) -> Iterator[str]:
        live = self._live
        return (k for k, t in list(self._order) if live.get(k) == t)

    def append(self, key: str) -> None:
        """Queue ``key`` last (moved there if it was queued already)."""
        t = next(self._tickets)
        self._forget(key)
        self._live[key] = t
        self._order.append((key, t))

    def appendleft(self, key: str) -> None:
        """Queue ``key`` first (moved there if it was queued already)."""
        t = next(self._tickets)
        self._forget(key)
        self._live[key] = t
        self._order.appendleft((key, t))

    def popleft(self) -> str:
        """The first live key, removed; ``IndexError`` when none is left."""
        order, live = self._order, self._live
        while order:
            key, t = order.popleft()
            if live.get(key) == t:
                del live[key]
                return key
        raise IndexError("pop from an empty PendingQueue")

    def discard(self, key: str) -> bool:
        """Remove ``key`` if queued (O(1)); whether it was."""
        if key not in self._live:
            return False
        self._forget(key)
        return True

    def _forget(self, key: str) -> None:
        if self._live.pop(key, None) is not None:
            dead = len(self._order) - len(self._live)
            if dead > COMPACT_MIN and dead > len(self._live):
                self._compact()

    def _compact(self) -> None:
        live = self._live
        self._order = deque(e for e in self._order if live.get(e[0]) == e[1])
