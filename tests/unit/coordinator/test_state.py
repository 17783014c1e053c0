"""DispatchState: capacity, least-loaded dispatch, rank death, retries, duplicates, restore."""

from __future__ import annotations

import pytest

from polar_hpc.coordinator.state import DispatchState, QueueFull
from polar_hpc.wire.control import SessionRef, SessionState
from polar_hpc.wire.session import Task


def _state(**kw: object) -> DispatchState:
    return DispatchState(max_attempts=2, heartbeat_timeout_s=10.0, **kw)  # type: ignore[arg-type]


def test_dispatch_never_exceeds_capacity_and_balances() -> None:
    st = _state()
    st.add_task(Task(task_id="t", instruction="x", num_samples=10))
    st.register(b"a", 0, 3, now=0.0)
    st.register(b"b", 1, 2, now=0.0)
    out = st.dispatch()
    assert {r: len(v) for r, v in out.items()} == {0: 3, 1: 2}
    assert len(st.pending) == 5
    assert st.dispatch() == {}
    assert st.counts[SessionState.RUNNING] == 5


def test_least_loaded_first() -> None:
    st = _state()
    st.add_task(Task(task_id="t", instruction="x", num_samples=2))
    st.register(b"a", 0, 4, now=0.0)
    st.register(b"b", 1, 4, now=0.0)
    out = st.dispatch()
    assert sorted(len(v) for v in out.values()) == [1, 1]


def test_done_then_commit_completes_task() -> None:
    st = _state()
    st.add_task(Task(task_id="t", instruction="x", num_samples=1))
    st.register(b"a", 0, 1, now=0.0)
    (s,) = st.dispatch()[0]
    assert st.done(b"a", s.key, s.attempt, reward=1.0, accepted=True)
    assert st.counts[SessionState.DONE] == 1 and not st.finished
    assert st.committed(b"a", [s.key]) == [s.key]
    assert st.finished and st.accepted == 1 and st.completed_tasks == ["t"]


def test_dead_rank_requeues_with_next_attempt_then_error() -> None:
    st = _state()
    st.add_task(Task(task_id="t", instruction="x", num_samples=1))
    st.register(b"a", 0, 1, now=0.0)
    st.register(b"b", 1, 1, now=5.0)
    (rank, (s,)), = st.dispatch().items()
    assert s.attempt == 0
    st.heartbeat(b"b", now=12.0)
    dead = st.expire(now=12.0)
    assert [r.rank for r in dead] == [rank] == [0]
    (s2,) = st.dispatch()[1]
    assert (s2.key, s2.attempt) == (s.key, 1)
    st.rank_dead(1, "test")
    assert st.sessions[s.key].state == SessionState.ERROR
    assert st.errored and st.errored[0][0] == s.key
    assert st.finished


def test_uncommitted_results_are_redone_when_rank_dies() -> None:
    st = _state()
    st.add_task(Task(task_id="t", instruction="x", num_samples=1))
    st.register(b"a", 0, 1, now=0.0)
    (s,) = st.dispatch()[0]
    st.done(b"a", s.key, 0)
    st.rank_dead(0)
    assert st.sessions[s.key].state == SessionState.PENDING
    assert st.sessions[s.key].failures == 0


def test_first_result_wins_and_duplicates_counted() -> None:
    st = _state()
    st.add_task(Task(task_id="t", instruction="x", num_samples=1))
    st.register(b"a", 0, 1, now=0.0)
    (s,) = st.dispatch()[0]
    assert st.done(b"a", s.key, 0)
    st.register(b"b", 1, 1, now=0.0)
    assert not st.done(b"b", s.key, 0)
    assert st.duplicates == 1


def test_restore_skips_committed_and_reregister_adopts() -> None:
    st = _state()
    st.restore_committed({"t/0": (0, 1.0), "t/2": (2, 0.0)})
    st.add_task(Task(task_id="t", instruction="x", num_samples=4))
    assert list(st.pending) == ["t/1", "t/3"]
    # the outcomes the shards hold count as if this coordinator had seen them: t/0 accepted, t/2 an ERROR
    assert (st.accepted, st.failed, st.reward_sum) == (1, 1, 1.0)
    stale = st.register(b"a", 0, 4, now=0.0, active=[SessionRef("t/1", 0)], uncommitted=[SessionRef("t/0", 0)])
    assert stale == ["t/0"]
    assert st.sessions["t/1"].state == SessionState.RUNNING
    assert [s.key for s in st.dispatch()[0]] == ["t/3"]


def test_reject_requeues_without_failure() -> None:
    st = _state()
    st.add_task(Task(task_id="t", instruction="x", num_samples=1))
    st.register(b"a", 0, 1, now=0.0)
    (s,) = st.dispatch()[0]
    st.reject(b"a", s.key, 0)
    assert st.sessions[s.key].state == SessionState.PENDING
    assert st.dispatch() == {}  # rank marked draining until its next heartbeat
    st.heartbeat(b"a", 1.0, draining=False)
    assert [x.key for x in st.dispatch()[0]] == [s.key]


def test_cancel_and_limits() -> None:
    st = _state(max_pending=3)
    st.add_task(Task(task_id="t", instruction="x", num_samples=3))
    with pytest.raises(QueueFull, match="pending limit 3"):
        st.add_task(Task(task_id="u", instruction="x", num_samples=1))
    with pytest.raises(ValueError, match="already submitted"):
        st.add_task(Task(task_id="t", instruction="x", num_samples=1))
    st.register(b"a", 0, 1, now=0.0)
    st.dispatch()
    cancelled, running = st.cancel_task("t")
    assert cancelled == 2 and running == {0: ["t/0"]}
    assert st.task_state("t") == "running"


def test_task_fully_restored_from_shards_counts_complete() -> None:
    st = _state()
    st.restore_committed(dict.fromkeys(["t/0", "t/1", "u/0"], (0, 0.0)))
    st.add_task(Task(task_id="t", instruction="x", num_samples=2))
    st.add_task(Task(task_id="u", instruction="x", num_samples=2))
    assert st.tasks["t"].open == 0 and st.tasks["u"].open == 1
    assert st.tasks_completed == 1 and not st.finished


def _one_running(st: DispatchState, n: int = 1) -> list[str]:
    st.add_task(Task(task_id="t", instruction="x", num_samples=n))
    st.register(b"a", 0, n, now=0.0)
    return [s.key for s in st.dispatch()[0]]


def test_released_cancelled_session_frees_the_slot_and_completes_the_task() -> None:
    st = _state()
    (key,) = _one_running(st)
    cancelled, running = st.cancel_task("t")
    assert (cancelled, running) == (0, {0: [key]})
    st.release(b"a", key, 0, "cancelled")
    assert st.sessions[key].state == SessionState.CANCELLED
    assert st.ranks[0].free == 1 and st.finished and st.task_state("t") == "cancelled"


def test_drained_sessions_are_requeued_without_a_failure() -> None:
    st = _state()  # max_attempts=2
    (key,) = _one_running(st)
    for attempt in range(5):
        st.release(b"a", key, attempt, "drained")
        s = st.sessions[key]
        assert s.state == SessionState.PENDING and s.failures == 0
        assert st.ranks[0].free == 1
        assert st.dispatch()[0][0].attempt == attempt + 1


def test_failed_release_counts_a_failure_also_after_done() -> None:
    st = _state()  # max_attempts=2
    (key,) = _one_running(st)
    st.done(b"a", key, 0)
    st.release(b"a", key, 0, "failed")  # the shard write failed after SessionDone
    assert st.sessions[key].state == SessionState.PENDING and st.sessions[key].failures == 1
    assert not st.ranks[0].uncommitted
    st.dispatch()
    st.release(b"a", key, 1, "failed")
    assert st.sessions[key].state == SessionState.ERROR and st.finished


def test_release_of_an_old_attempt_or_from_another_rank_is_ignored() -> None:
    st = _state()
    (key,) = _one_running(st)
    st.register(b"b", 1, 1, now=0.0)
    st.release(b"b", key, 0, "drained")
    st.release(b"a", key, 7, "drained")
    assert st.sessions[key].state == SessionState.RUNNING and st.ranks[0].free == 0


def test_reregister_with_unacknowledged_commit_does_not_run_it_again() -> None:
    st = _state()
    (key,) = _one_running(st)
    st.done(b"a", key, 0)
    # the rank published the shard, but its Committed was lost with the connection
    st.register(b"a2", 0, 1, now=1.0, committed=[key])
    assert st.sessions[key].state == SessionState.COMMITTED and not st.pending and st.finished
    assert st.dispatch() == {}


def test_task_complete_at_restore_is_marked() -> None:
    st = _state()
    st.restore_committed({"t/0": (0, 0.0)})
    st.add_task(Task(task_id="t", instruction="x", num_samples=1))
    st.add_task(Task(task_id="u", instruction="x", num_samples=1))
    assert st.tasks["t"].restored_complete and not st.tasks["u"].restored_complete


def test_returning_rank_with_a_result_takes_it_back_from_the_rerun() -> None:
    st = _state()
    (key,) = _one_running(st)
    st.done(b"a", key, 0)
    st.rank_dead(0, "network blip")
    st.register(b"b", 1, 1, now=1.0)
    assert [s.key for s in st.dispatch()[1]] == [key]
    # rank 0 comes back: the result is in its shard buffer and will be published
    stale = st.register(b"a2", 0, 1, now=2.0, uncommitted=[SessionRef(key, 0)])
    assert stale == [] and st.revoked == {1: [key]}
    assert st.sessions[key].state == SessionState.DONE and st.sessions[key].rank == 0
    assert st.ranks[1].free == 1
    st.release(b"b", key, 1, "cancelled")  # rank 1 stopped the rerun: ignored
    assert st.sessions[key].state == SessionState.DONE
    st.committed(b"a2", [key])
    assert st.finished


def test_failed_counts_committed_errors_and_given_up_sessions() -> None:
    st = _state()
    st.add_task(Task(task_id="t", instruction="x", num_samples=3))
    st.register(b"a", 0, 3, now=0.0)
    keys = [s.key for s in st.dispatch()[0]]
    assert st.done(b"a", keys[0], 0, reward=1.0, accepted=True)
    assert st.done(b"a", keys[1], 0, failed=True, error="INIT failed")
    assert st.failed == 0, "counted once committed"
    st.committed(b"a", keys[:2])
    st.give_up(keys[2], "lost 3 times")
    assert (st.accepted, st.failed, st.reward_sum) == (1, 2, 1.0)
