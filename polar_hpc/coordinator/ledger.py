"""Session states and the tallies that follow them: per-state counts, outcomes, completed tasks, and the
requeue of a session a rank lost (attempt + 1; ERROR after ``max_attempts`` failures). ``DispatchState`` builds
on it; pure, as it is."""

from __future__ import annotations

from collections.abc import Iterable

from polar_hpc.coordinator.entries import FIRST_TERMINAL, SessionEntry, TaskEntry
from polar_hpc.coordinator.pending import PendingQueue
from polar_hpc.log import get_logger
from polar_hpc.wire.control import SessionState

log = get_logger("coordinator.state")


class SessionLedger:
    def __init__(self, *, max_attempts: int = 3) -> None:
        self.max_attempts = max_attempts
        self.tasks: dict[str, TaskEntry] = {}
        self.sessions: dict[str, SessionEntry] = {}
        self.pending = PendingQueue()
        self.counts: list[int] = [0] * len(SessionState)
        """Sessions per state, indexed by ``SessionState`` (a list: enum hashing is slow at 1M sessions)."""
        self.accepted = 0
        self.failed = 0
        """Committed sessions whose outcome is an ERROR, and sessions given up (ERROR state)."""
        self.reward_sum = 0.0
        self.tasks_completed = 0
        self.completed_tasks: list[str] = []
        """Tasks that became complete since the server last drained this list."""
        self.errored: list[tuple[str, str]] = []
        """(key, error) of sessions given up since the server last drained this list."""

    @property
    def finished(self) -> bool:
        return bool(self.tasks) and self.tasks_completed == len(self.tasks)

    # ---- transitions --------------------------------------------------------------------------------------

    def _remove_pending(self, key: str) -> None:
        self.pending.discard(key)

    def _requeue(self, keys: Iterable[str], crashed: set[str]) -> None:
        for key in sorted(keys):
            s = self.sessions.get(key)
            if s is None or s.state >= FIRST_TERMINAL or s.state == SessionState.PENDING:
                continue
            s.attempt += 1
            s.rank = -1
            s.stage = ""
            if key in crashed:
                s.failures += 1
            if s.failures >= self.max_attempts:
                s.error = f"gateway rank died or lost it {s.failures} times while running it"
                self._set_state(key, s, SessionState.ERROR)
                self.errored.append((key, s.error))
                log.error("session %s: giving up after %d attempts", key, s.failures)
                continue
            self._set_state(key, s, SessionState.PENDING)
            self.pending.appendleft(key)

    def _set_state(self, key: str, s: SessionEntry, state: SessionState) -> None:
        old = s.state
        if old == state:
            return
        self.counts[old] -= 1
        self.counts[state] += 1
        s.state = state
        if state == SessionState.COMMITTED:
            self.accepted += int(s.accepted)
            self.failed += int(s.failed)
            self.reward_sum += s.reward
        elif state == SessionState.ERROR:
            self.failed += 1
        task = self.tasks.get(s.task_id)
        if task is None:
            return
        if state >= FIRST_TERMINAL and old < FIRST_TERMINAL:
            task.open -= 1
            if task.open == 0:
                self.tasks_completed += 1
                self.completed_tasks.append(s.task_id)
