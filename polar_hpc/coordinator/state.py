"""The coordinator's bookkeeping, free of sockets and clocks (``now`` is passed in): tasks, sessions, ranks.

A session (``task_id/sample_index``) is PENDING → RUNNING (dispatched to a rank) → DONE (the rank reported its
result) → COMMITTED (the result is in a published shard). A rank that misses heartbeats is dead: its RUNNING
sessions go back to the queue with attempt + 1 (ERROR after ``max_attempts``), and so do its DONE sessions, whose
results died with its unpublished shard. The first result reported for a key wins; later ones are duplicates.

A rank reports every session that ends without a result (``Released``): cancelled ones become CANCELLED, ones cut
by a drain go back to the queue without counting a failure, lost ones (e.g. a failed shard write) count one.
A rank that re-registers names the keys it has published but whose ``Committed`` was not acknowledged; they are
taken as COMMITTED, so a lost ``Committed`` never runs a session twice.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable

from polar_hpc.coordinator.entries import FIRST_TERMINAL, RankEntry, SessionEntry, TaskEntry
from polar_hpc.coordinator.ledger import SessionLedger
from polar_hpc.log import get_logger
from polar_hpc.wire.control import SessionRef, SessionState, TaskState
from polar_hpc.wire.ids import SessionId
from polar_hpc.wire.session import Session, Task
from polar_hpc.wire.traces import TraceStatus
from polar_hpc.wire.versions import INITIAL, WeightVersion

log = get_logger("coordinator.state")


class QueueFull(RuntimeError):
    pass


class DispatchState(SessionLedger):
    """Pure state machine; the server feeds it messages and sends what it returns."""

    def __init__(self, *, max_attempts: int = 3, heartbeat_timeout_s: float = 30.0,
                 max_pending: int = 1_000_000) -> None:
        super().__init__(max_attempts=max_attempts)
        self.heartbeat_timeout_s = heartbeat_timeout_s
        self.max_pending = max_pending
        self.ranks: dict[int, RankEntry] = {}
        self.by_peer: dict[bytes, int] = {}
        self.committed_before: dict[str, tuple[int, float]] = {}
        """Keys found in shards at start whose task is not (yet) known: their (status, reward)."""
        self.duplicates = 0
        self.tokens = 0
        """Tokens of the sessions done (first result per key), for tokens/s."""
        self.revoked: dict[int, list[str]] = {}
        """Running keys per rank taken back (another rank holds their result) since the server last drained it:
        the server sends those ranks ``CancelSessions``."""
        self._heap: list[tuple[float, int, int, int, int]] = []
        self._seq = itertools.count()

    # ---- tasks ------------------------------------------------------------------------------------------

    def restore_committed(self, outcomes: dict[str, tuple[int, float]]) -> None:
        """Sessions found in the shards at start, with their (``TraceStatus`` value, reward)."""
        for key, outcome in outcomes.items():
            entry = self.sessions.get(key)
            if entry is None:
                self.committed_before[key] = outcome
            elif entry.state < FIRST_TERMINAL:
                entry.restore_outcome(outcome)
                self._set_state(key, entry, SessionState.COMMITTED)

    def add_task(self, task: Task) -> None:
        if task.task_id in self.tasks:
            raise ValueError(f"task {task.task_id!r} was already submitted")
        if task.num_samples < 1:
            raise ValueError(f"task {task.task_id!r}: num_samples must be >= 1, got {task.num_samples}")
        if len(self.pending) + task.num_samples > self.max_pending:
            raise QueueFull(
                f"task {task.task_id!r}: {task.num_samples} sessions would exceed the pending limit "
                f"{self.max_pending} ({len(self.pending)} pending); submit again later"
            )
        keys = [SessionId(task_id=task.task_id, sample=i).key for i in range(task.num_samples)]
        entry = TaskEntry(task=task, keys=keys, open=0)
        self.counts[SessionState.PENDING] += len(keys)
        committed_before = self.committed_before
        for i, key in enumerate(keys):
            s = SessionEntry(task_id=task.task_id, sample_index=i)
            self.sessions[key] = s
            outcome = committed_before.pop(key, None) if committed_before else None
            if outcome is not None:
                s.restore_outcome(outcome)
                self._set_state(key, s, SessionState.COMMITTED)
            else:
                entry.open += 1
                self.pending.append(key)
        self.tasks[task.task_id] = entry  # after the loop: restored sessions do not count as closing it
        if entry.open == 0:
            entry.restored_complete = True
            self.tasks_completed += 1
            self.completed_tasks.append(task.task_id)

    def give_up(self, key: str, error: str) -> None:
        s = self.sessions.get(key)
        if s is not None and s.state < FIRST_TERMINAL:
            self._remove_pending(key)
            s.error = error
            self._set_state(key, s, SessionState.ERROR)

    def cancel_task(self, task_id: str) -> tuple[int, dict[int, list[str]]]:
        """Cancel pending sessions; returns (cancelled, running keys per rank). The server asks those ranks to
        cancel the running ones: each becomes CANCELLED when its rank releases it, or keeps its result if that
        comes first."""
        entry = self.tasks.get(task_id)
        if entry is None:
            return 0, {}
        entry.cancelled = True
        cancelled = 0
        running: dict[int, list[str]] = {}
        for key in entry.keys:
            s = self.sessions[key]
            if s.state == SessionState.PENDING:
                self.pending.discard(key)
                self._set_state(key, s, SessionState.CANCELLED)
                cancelled += 1
            elif s.state == SessionState.RUNNING:
                running.setdefault(s.rank, []).append(key)
        return cancelled, running

    # ---- ranks ------------------------------------------------------------------------------------------

    def register(self, peer: bytes, rank: int, capacity: int, now: float, *, host: str = "",
                 proxy_endpoint: str = "", active: Iterable[SessionRef] = (),
                 uncommitted: Iterable[SessionRef] = (), committed: Iterable[str] = (),
                 draining: bool = False) -> list[str]:
        """A rank (re)joins. Keys it published (``committed``) are COMMITTED; sessions it still holds are
        adopted; returns keys it holds that are not ours any more (already terminal or running elsewhere), which
        it may drop."""
        old = self.ranks.get(rank)
        if old is not None and old.peer != peer:
            self.by_peer.pop(old.peer, None)
        entry = RankEntry(rank=rank, peer=peer, capacity=capacity, host=host, proxy_endpoint=proxy_endpoint,
                          last_seen=now, draining=draining)
        self.ranks[rank] = entry
        self.by_peer[peer] = rank
        committed = list(committed)
        if committed:
            if old is not None:
                old.uncommitted.difference_update(committed)
                old.in_flight.difference_update(committed)
            self.committed(peer, committed)
        stale: list[str] = []
        held = {r.key: (r.attempt, SessionState.RUNNING) for r in active}
        held.update({r.key: (r.attempt, SessionState.DONE) for r in uncommitted})
        for key, (attempt, state) in held.items():
            s = self.sessions.get(key)
            other = self.ranks.get(s.rank) if s is not None and s.rank not in (-1, rank) else None
            if (s is not None and other is not None and state == SessionState.DONE
                    and s.state == SessionState.RUNNING):
                # its result is in this rank's shard buffer and will be published: keep it, stop the rerun
                other.in_flight.discard(key)
                self._push(other)
                if other.alive:
                    self.revoked.setdefault(other.rank, []).append(key)
            elif (s is None or s.state >= FIRST_TERMINAL
                  or (s.rank not in (-1, rank) and s.state != SessionState.PENDING)):
                stale.append(key)
                continue
            if s.state == SessionState.PENDING:
                self._remove_pending(key)
            s.attempt, s.rank = max(s.attempt, attempt), rank
            self._set_state(key, s, state)
            (entry.in_flight if state == SessionState.RUNNING else entry.uncommitted).add(key)
        if old is not None:
            gone = (old.in_flight | old.uncommitted) - entry.in_flight - entry.uncommitted
            self._requeue(gone, crashed=old.in_flight - entry.in_flight)
        self._push(entry)
        return stale

    def heartbeat(self, peer: bytes, now: float, occupancy: dict[str, int] | None = None,
                  draining: bool = False) -> RankEntry | None:
        rank = self.by_peer.get(peer)
        if rank is None:
            return None
        entry = self.ranks[rank]
        entry.last_seen = now
        if occupancy is not None:
            entry.occupancy = occupancy
        if draining != entry.draining:
            entry.draining = draining
            self._push(entry)
        return entry

    def reject(self, peer: bytes, key: str, attempt: int) -> None:
        """The rank refused a dispatched session: back to the front of the queue, no failure counted."""
        r = self.rank_of(peer)
        s = self.sessions.get(key)
        if r is None or s is None or key not in r.in_flight or s.attempt != attempt:
            return
        r.in_flight.discard(key)
        r.draining = True  # until its next heartbeat says otherwise
        s.rank = -1
        self._set_state(key, s, SessionState.PENDING)
        self.pending.appendleft(key)
        self._push(r)

    def release(self, peer: bytes, key: str, attempt: int, cause: str) -> None:
        """The rank ended a session it held without a (kept) result; frees its slot.

        ``cancelled``: CANCELLED when its task was cancelled (else queued again, no failure). ``drained``:
        queued again, no failure counted. ``failed``: queued again as a failed attempt (ERROR after
        ``max_attempts``)."""
        r = self.rank_of(peer)
        s = self.sessions.get(key)
        if r is None or s is None or s.attempt != attempt or s.rank != r.rank:
            return
        if key not in r.in_flight and key not in r.uncommitted:
            return
        r.in_flight.discard(key)
        r.uncommitted.discard(key)
        self._push(r)
        if s.state >= FIRST_TERMINAL:
            return
        task = self.tasks.get(s.task_id)
        if task is not None and task.cancelled:
            s.rank = -1
            self._set_state(key, s, SessionState.CANCELLED)
            return
        self._requeue([key], crashed={key} if cause == "failed" else set())

    def rank_of(self, peer: bytes) -> RankEntry | None:
        rank = self.by_peer.get(peer)
        return None if rank is None else self.ranks[rank]

    def expire(self, now: float) -> list[RankEntry]:
        """Declare ranks dead whose last heartbeat is older than the timeout."""
        dead = [r for r in self.ranks.values() if r.alive and now - r.last_seen > self.heartbeat_timeout_s]
        for r in dead:
            self.rank_dead(r.rank, reason=f"no heartbeat for {now - r.last_seen:.1f}s")
        return dead

    def rank_dead(self, rank: int, reason: str = "") -> None:
        entry = self.ranks.get(rank)
        if entry is None or not entry.alive:
            return
        entry.alive = False
        self.by_peer.pop(entry.peer, None)
        log.warning("gateway rank %d declared dead (%s): re-dispatching %d running and %d uncommitted sessions",
                    rank, reason, len(entry.in_flight), len(entry.uncommitted))
        self._requeue(entry.in_flight | entry.uncommitted, crashed=entry.in_flight)
        entry.in_flight.clear()
        entry.uncommitted.clear()

    def set_draining(self, rank: int) -> None:
        if rank in self.ranks:
            self.ranks[rank].draining = True

    # ---- dispatch ---------------------------------------------------------------------------------------

    def _push(self, r: RankEntry) -> None:
        r.version += 1
        if r.alive and not r.draining and r.free > 0:
            load, ready = r.load_key()
            heapq.heappush(self._heap, (load, ready, next(self._seq), r.rank, r.version))
            if len(self._heap) > 2 * len(self.ranks) + 64:
                self._rebuild_heap()

    def _rebuild_heap(self) -> None:
        """One entry per rank that can take a session. Each change to a rank pushes an entry and outdates its
        last, and only ``dispatch`` pops them: while the queue is empty they would pile up without bound (one a
        session done, for as long as no task arrives)."""
        self._heap = [(*r.load_key(), next(self._seq), r.rank, r.version) for r in self.ranks.values()
                      if r.alive and not r.draining and r.free > 0]
        heapq.heapify(self._heap)

    def dispatch(self, limit: int | None = None) -> dict[int, list[Session]]:
        """Assign pending sessions to the least-loaded live ranks, never beyond a rank's capacity."""
        out: dict[int, list[Session]] = {}
        n = 0
        while self.pending and self._heap and (limit is None or n < limit):
            _, _, _, rank, version = self._heap[0]
            r = self.ranks.get(rank)
            if r is None or r.version != version or not r.alive or r.draining or r.free <= 0:
                heapq.heappop(self._heap)
                continue
            key = self.pending.popleft()
            s = self.sessions[key]
            if s.state != SessionState.PENDING:
                continue
            task = self.tasks[s.task_id].task
            s.rank = rank
            self._set_state(key, s, SessionState.RUNNING)
            r.in_flight.add(key)
            out.setdefault(rank, []).append(Session(task=task, sample_index=s.sample_index, attempt=s.attempt,
                                                    policy_version=_policy_version(task)))
            n += 1
            heapq.heappop(self._heap)
            self._push(r)
        return out

    # ---- session progress -------------------------------------------------------------------------------

    def status(self, peer: bytes, key: str, attempt: int, stage: str) -> None:
        s = self.sessions.get(key)
        if s is not None and s.attempt == attempt and s.state == SessionState.RUNNING:
            s.stage = stage

    def done(self, peer: bytes, key: str, attempt: int, *, reward: float = 0.0, accepted: bool = False,
             error: str | None = None, tokens: int = 0, failed: bool = False) -> bool:
        """A rank finished a session. True when this is the first result for the key (stream it)."""
        rank = self.by_peer.get(peer)
        s = self.sessions.get(key)
        if rank is None or s is None:
            return False
        r = self.ranks[rank]
        r.in_flight.discard(key)
        self._push(r)
        if s.state in (SessionState.DONE, SessionState.COMMITTED) or (s.state >= FIRST_TERMINAL and s.rank != rank):
            self.duplicates += 1
            log.info("session %s attempt %d done again on rank %d; keeping the first result", key, attempt, rank)
            r.uncommitted.add(key)
            return False
        if s.state == SessionState.PENDING:
            self._remove_pending(key)
        s.rank, s.attempt, s.reward, s.accepted, s.error = rank, attempt, reward, accepted, error
        s.failed = failed
        self.tokens += tokens
        r.uncommitted.add(key)
        self._set_state(key, s, SessionState.DONE)
        return True

    def committed(self, peer: bytes, keys: Iterable[str]) -> list[str]:
        """Keys of a published shard; returns those that reached COMMITTED now."""
        rank = self.by_peer.get(peer)
        r = self.ranks.get(rank) if rank is not None else None
        newly: list[str] = []
        for key in keys:
            if r is not None:
                r.uncommitted.discard(key)
                r.in_flight.discard(key)
            s = self.sessions.get(key)
            if s is None:
                self.committed_before.setdefault(key, (TraceStatus.COMPLETED, 0.0))
                continue
            if s.state == SessionState.COMMITTED:
                continue
            if s.state == SessionState.PENDING:
                self._remove_pending(key)
            self._set_state(key, s, SessionState.COMMITTED)
            newly.append(key)
        if r is not None:
            self._push(r)
        return newly

    # ---- queries ----------------------------------------------------------------------------------------

    def task_state(self, task_id: str) -> TaskState:
        t = self.tasks.get(task_id)
        if t is None:
            return "unknown"
        states = [self.sessions[k].state for k in t.keys]
        if t.open == 0:
            return "cancelled" if all(x == SessionState.CANCELLED for x in states) else "completed"
        return "pending" if all(x == SessionState.PENDING for x in states) else "running"


def _policy_version(task: Task) -> WeightVersion:
    """Trainers tag task groups with the policy version that sampled them (``Task.group``)."""
    return task.group.policy_version if task.group is not None else INITIAL
