"""Result streaming to trainers with credit-based flow control and a bounded buffer per subscriber.

A subscriber grants credits; each streamed result spends one. Results beyond its credits wait in a buffer of
``capacity`` entries; when that is full the oldest is dropped and the subscriber is later sent ``Lagged`` with
the dropped sequence range, so it reads those from the committed shards. Memory per subscriber stays bounded.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from polar_hpc.wire.control import Lagged, encode


@dataclass(slots=True)
class _Sub:
    credits: int
    last_seen: float
    buffer: deque[tuple[int, bytes]] = field(default_factory=deque)
    lag_first: int = -1
    lag_last: int = -1
    dropped: int = 0


class Subscribers:
    def __init__(self, capacity: int, shards_dir: str, timeout_s: float) -> None:
        self.capacity = max(1, capacity)
        self.shards_dir = shards_dir
        self.timeout_s = timeout_s
        self.subs: dict[bytes, _Sub] = {}
        self.seq = 0

    def __len__(self) -> int:
        return len(self.subs)

    def subscribe(self, peer: bytes, credits: int, now: float) -> None:
        self.subs[peer] = _Sub(credits=max(0, credits), last_seen=now)

    def unsubscribe(self, peer: bytes) -> None:
        self.subs.pop(peer, None)

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def publish(self, seq: int, frame: bytes) -> list[tuple[bytes, bytes]]:
        """``frame`` is an encoded ``ResultMsg``; returns (peer, frame) pairs to send now."""
        out: list[tuple[bytes, bytes]] = []
        for peer, s in self.subs.items():
            if s.credits > 0 and not s.buffer and s.dropped == 0:
                s.credits -= 1
                out.append((peer, frame))
                continue
            if len(s.buffer) >= self.capacity:
                old_seq, _ = s.buffer.popleft()
                if s.dropped == 0:
                    s.lag_first = old_seq
                s.lag_last = old_seq
                s.dropped += 1
            s.buffer.append((seq, frame))
        return out

    def credit(self, peer: bytes, credits: int, now: float) -> list[bytes]:
        """Add credits; returns frames to send to ``peer`` (a ``Lagged`` first when results were dropped)."""
        s = self.subs.get(peer)
        if s is None:
            return []
        s.last_seen = now
        s.credits += max(0, credits)
        out: list[bytes] = []
        if s.dropped:
            out.append(encode(Lagged(first_seq=s.lag_first, last_seq=s.lag_last, dropped=s.dropped,
                                     shards_dir=self.shards_dir)))
            s.dropped = 0
        while s.credits > 0 and s.buffer:
            out.append(s.buffer.popleft()[1])
            s.credits -= 1
        return out

    def expire(self, now: float) -> list[bytes]:
        gone = [p for p, s in self.subs.items() if now - s.last_seen > self.timeout_s]
        for p in gone:
            del self.subs[p]
        return gone
