"""Names made from ids, each format written in one place and read back by its pair (session ids:
``test_session_id.py``)."""

from __future__ import annotations

from pathlib import Path

from polar_hpc.util.fs import safe_name, unique_name
from polar_hpc.wire.rundir import RunDir, session_rank


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
