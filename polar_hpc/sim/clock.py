"""An asyncio event loop with virtual time, to run the real pool code under a simulated clock.

``loop.time()`` starts at 0 and jumps forward whenever the loop would otherwise sleep: timers
(``asyncio.sleep``, ``asyncio.timeout``, ``wait_for``) fire in order, instantly in wall time.
Ready I/O is still polled, so pipes and sockets work, but a coroutine that waits on real I/O
with a timer pending will see the timer fire first. Use it only for code whose waits are timers.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


class _VirtualSelector(selectors.BaseSelector):
    """Delegates registration to a real selector; turns a blocking ``select`` into a time jump."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        self._inner = selectors.DefaultSelector()
        self._loop = loop

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._inner.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._inner.select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            # Nothing scheduled: only another thread or real I/O can wake the loop.
            return self._inner.select(None)
        self._loop.advance(timeout)
        return []

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._inner.get_map()

    def close(self) -> None:
        self._inner.close()


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._virtual_now = 0.0
        super().__init__(selector=_VirtualSelector(self))
        self._clock_resolution = 1e-9

    def time(self) -> float:
        return self._virtual_now

    def advance(self, seconds: float) -> None:
        if seconds > 0:
            self._virtual_now += seconds


def run_simulated(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on a fresh :class:`VirtualTimeLoop` and close it."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
