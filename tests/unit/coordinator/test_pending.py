"""PendingQueue: FIFO with front requeue, O(1) removal by key, compaction of dead entries; and the dispatch heap
bounded while nothing is queued."""

from __future__ import annotations

import random
import time
from collections import deque

import pytest

from polar_hpc.coordinator import pending as pending_mod
from polar_hpc.coordinator.pending import PendingQueue
from polar_hpc.coordinator.state import DispatchState
from polar_hpc.wire.control import SessionRef, SessionState
from polar_hpc.wire.session import Task


def test_fifo_front_requeue_and_removal() -> None:
    q = PendingQueue(["a", "b", "c"])
    q.appendleft("z")
    assert list(q) == ["z", "a", "b", "c"] and len(q) == 4 and "b" in q
    assert q.discard("b") and not q.discard("b") and "b" not in q
    assert list(q) == ["z", "a", "c"] and len(q) == 3
    assert q.popleft() == "z"
    q.append("a")  # queued again: moved to the back, once
    assert list(q) == ["c", "a"]
    assert [q.popleft(), q.popleft()] == ["c", "a"]
    assert not q
    with pytest.raises(IndexError):
        q.popleft()


def test_matches_a_deque_under_random_operations() -> None:
    rng = random.Random(7)
    q, ref = PendingQueue(), deque[str]()
    for step in range(20_000):
        op, key = rng.random(), f"k{rng.randrange(300)}"
        if op < 0.35:
            if key in ref:
                ref.remove(key)
            ref.append(key)
            q.append(key)
        elif op < 0.5:
            if key in ref:
                ref.remove(key)
            ref.appendleft(key)
            q.appendleft(key)
        elif op < 0.8:
            assert q.discard(key) == (key in ref)
            if key in ref:
                ref.remove(key)
        elif ref:
            assert q.popleft() == ref.popleft()
        assert len(q) == len(ref), step
    assert list(q) == list(ref)


def test_dead_entries_are_compacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pending_mod, "COMPACT_MIN", 10)
    q = PendingQueue(f"k{i}" for i in range(100))
    for i in range(0, 100, 2):
        q.discard(f"k{i}")
    assert len(q._order) <= 2 * len(q) + 11  # never more dead entries than live ones (past the minimum)
    assert list(q) == [f"k{i}" for i in range(1, 100, 2)]


def test_adopting_held_sessions_is_linear() -> None:
    """A restarted coordinator adopts what 32 ranks × 512 sessions hold: with ``deque.remove`` per key this took
    ~1 s here (quadratic; ~45 s at 64 × 1,024); one pass now."""
    st = DispatchState()
    for i in range(1024):
        st.add_task(Task(task_id=f"t{i}", instruction="x", num_samples=16))
    keys = list(st.pending)
    t0 = time.perf_counter()
    for r in range(32):
        st.register(bytes([r]), r, 512, 0.0, active=[SessionRef(keys[j], 0) for j in range(r, len(keys), 32)])
    assert time.perf_counter() - t0 < 0.5
    assert not st.pending and st.counts[SessionState.RUNNING] == len(keys)
    assert st.dispatch() == {}


def test_cancel_and_requeue_keep_queue_exact() -> None:
    st = DispatchState(max_attempts=3)
    st.add_task(Task(task_id="a", instruction="x", num_samples=3))
    st.add_task(Task(task_id="b", instruction="x", num_samples=2))
    st.register(b"r", 0, 2, 0.0)
    st.dispatch()  # a/0, a/1 running
    st.cancel_task("b")
    assert list(st.pending) == ["a/2"]
    st.rank_dead(0)
    assert list(st.pending) == ["a/1", "a/0", "a/2"]  # each requeued in front (as with the deque before)


def test_dispatch_heap_stays_bounded_without_pending() -> None:
    """Each done/commit pushes a heap entry; only dispatch pops them. With nothing queued they piled up, one per
    event; now the heap is rebuilt past 2 × ranks + 64 entries."""
    st = DispatchState()
    for r in range(8):
        st.register(bytes([r]), r, 1000, 0.0)
    st.add_task(Task(task_id="t", instruction="x", num_samples=4000))
    for rank, sessions in st.dispatch().items():
        peer = st.ranks[rank].peer
        for s in sessions:
            st.done(peer, s.key, s.attempt)
            st.committed(peer, [s.key])
    assert len(st._heap) <= 2 * 8 + 64
    st.add_task(Task(task_id="u", instruction="x", num_samples=16))
    out = st.dispatch()
    assert sorted(len(v) for v in out.values()) == [2] * 8  # still least-loaded first
