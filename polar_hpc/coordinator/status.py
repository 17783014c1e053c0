"""Run progress: a ``RunStatus`` from the dispatch state (the coordinator writes it to the run's ``status.json``)."""

from __future__ import annotations

from collections import deque

from polar_hpc.coordinator.state import DispatchState
from polar_hpc.wire.control import TERMINAL, RankInfo, RunStatus, SessionState


class Progress:
    """Throughput over a sliding window of counts of sessions done (evaluated, committed or not, or final)."""

    def __init__(self, started: float, window_s: float = 300.0) -> None:
        self.started = started
        self.window_s = window_s
        self.samples: deque[tuple[float, int]] = deque()

    def rate_per_s(self, now: float, done: int) -> float:
        self.samples.append((now, done))
        while len(self.samples) > 2 and now - self.samples[0][0] > self.window_s:
            self.samples.popleft()
        t0, n0 = self.samples[0]
        return (done - n0) / (now - t0) if now > t0 else 0.0


def build_status(state: DispatchState, progress: Progress, now: float, *, run_name: str, subscribers: int,
                 req: int = 0, ends_when_done: bool = True) -> RunStatus:
    """``finished`` is set only for a run that ends when its tasks are done (a serving coordinator never is)."""
    counts = {s.name.lower(): state.counts[s] for s in SessionState}
    done = sum(state.counts[s] for s in TERMINAL) + state.counts[SessionState.DONE]
    rate = progress.rate_per_s(now, done)
    remaining = len(state.sessions) - done
    committed = state.counts[SessionState.COMMITTED]
    ranks = [
        RankInfo(rank=r.rank, host=r.host, alive=r.alive, capacity=r.capacity, in_flight=len(r.in_flight),
                 uncommitted=len(r.uncommitted), occupancy=r.occupancy, last_seen_s=round(now - r.last_seen, 3))
        for r in sorted(state.ranks.values(), key=lambda r: r.rank)
    ]
    return RunStatus(
        req=req, run_name=run_name, updated=now, started=progress.started,
        tasks=len(state.tasks), tasks_completed=state.tasks_completed, sessions=counts,
        accepted=state.accepted, failed=state.failed, reward_sum=state.reward_sum,
        reward_mean=state.reward_sum / committed if committed else 0.0,
        duplicates=state.duplicates, ranks_alive=sum(r.alive for r in state.ranks.values()), ranks=ranks,
        throughput_per_min=rate * 60.0, eta_s=(remaining / rate) if rate > 0 and remaining else None,
        subscribers=subscribers, finished=ends_when_done and state.finished, tokens=state.tokens,
    )

