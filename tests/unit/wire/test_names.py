"""Ids and the names made from them: each format written in one place and read back by its pair."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar_hpc.util.fs import safe_name, unique_name
from polar_hpc.wire.records import Session, Task, format_session_id, parse_session_id, session_key
from polar_hpc.wire.rundir import RunDir, session_rank


@pytest.mark.parametrize(("task_id", "sample", "attempt"), [
    ("polar-swegym-7", 0, 0), ("owner__repo-12/with/slashes", 3, 11), ("has#hash", 2, 1),
])
def test_session_id_round_trip(task_id: str, sample: int, attempt: int) -> None:
    sid = format_session_id(session_key(task_id, sample), attempt)
    assert parse_session_id(sid) == (task_id, sample, attempt)


def test_session_id_is_the_sessions_own() -> None:
    session = Session(task=Task(task_id="t", instruction="do it"), sample_index=2, attempt=1)
    assert session.session_id == format_session_id(session.key, 1) == "t/2#1"
    assert parse_session_id(session.session_id) == ("t", 2, 1)


@pytest.mark.parametrize("foreign", ["session-0", "t/x#1", "t/1#", "t/1"])
def test_a_foreign_session_id_is_a_task_id_of_its_own(foreign: str) -> None:
    assert parse_session_id(foreign) == (foreign, 0, 0)


def test_file_names_from_ids() -> None:
    assert safe_name("t/0#1") == "t_0_1"
    assert safe_name("") == "_"
    assert safe_name("ok-name_1.x") == "ok-name_1.x"
    a, b = unique_name("a/b"), unique_name("a#b")
    assert a != b and a.startswith("a_b-") and b.startswith("a_b-")
    assert len(unique_name("x" * 500)) == 80 + 1 + 8


def test_session_rank_reads_back_the_sessions_folder(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    assert session_rank(run.sessions(12) / unique_name("t/0#0")) == (run.root, 12)
    assert session_rank(tmp_path / "elsewhere" / "rank-00012" / "s") is None
