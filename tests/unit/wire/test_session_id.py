"""``SessionId``: the one format and parse of ``task/sample#attempt``."""

from __future__ import annotations

import msgspec
import pytest

from polar_hpc.wire.ids import SessionId, task_of_key
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.session import Session, Task
from polar_hpc.wire.traces import TraceStatus, Trajectory


@pytest.mark.parametrize(("task_id", "sample", "attempt"), [
    ("polar-swegym-7", 0, 0), ("owner__repo-12/with/slashes", 3, 11), ("has#hash", 2, 1), ("t@step3", 1, 0),
])
def test_round_trip(task_id: str, sample: int, attempt: int) -> None:
    sid = SessionId(task_id=task_id, sample=sample, attempt=attempt)
    assert SessionId.parse(str(sid)) == sid
    assert SessionId.of_key(sid.key, attempt) == sid
    assert task_of_key(sid.key) == task_id


def test_sessions_and_results_name_the_same_id() -> None:
    session = Session(task=Task(task_id="t", instruction="do it"), sample_index=2, attempt=1)
    assert session.session_id == str(session.id) == "t/2#1" and session.key == "t/2"
    result = SessionResult(task_id="t", sample_index=2, attempt=1, trajectory=Trajectory(status=TraceStatus.ERROR))
    assert result.id == session.id and result.key == session.key


@pytest.mark.parametrize("bad", ["session-0", "t/x#1", "t/1#", "t/1", "/1#0", ""])
def test_a_bad_id_raises_naming_it(bad: str) -> None:
    with pytest.raises(ValueError, match=repr(bad).replace("[", r"\[")):
        SessionId.parse(bad)
    assert SessionId.parse_foreign(bad) == SessionId(task_id=bad)


@pytest.mark.parametrize("bad", ["t", "t/x", "t/1#0"])
def test_a_bad_key_raises(bad: str) -> None:
    with pytest.raises(ValueError, match="session key"):
        SessionId.of_key(bad)
    assert task_of_key(bad) == bad


def test_frozen_and_hashable() -> None:
    sid = SessionId(task_id="t", sample=1)
    with pytest.raises(AttributeError):
        sid.attempt = 2  # type: ignore[misc]
    assert {sid: 1}[SessionId.parse("t/1#0")] == 1
    assert msgspec.json.decode(msgspec.json.encode(sid), type=SessionId) == sid
