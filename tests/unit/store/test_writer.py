from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from polar_hpc.config.run import ShardConfig
from polar_hpc.store.reader import ShardReader
from polar_hpc.store.resume import resume_index
from polar_hpc.store.validate import validate_paths
from polar_hpc.store.writer import ShardWriter
from tests.fixtures.waits import wait_for

REPO = Path(__file__).resolve().parents[3]


def _writer(tmp_path: Path, **cfg: Any) -> tuple[ShardWriter, list[tuple[str, list[str]]]]:
    seen: list[tuple[str, list[str]]] = []
    w = ShardWriter(
        tmp_path, 4, ShardConfig(**cfg), {"host": "n1"}, on_commit=lambda p, k: seen.append((p.name, k))
    )
    return w, seen


def test_rotates_by_sessions_and_reports_commits(tmp_path: Path, session_result_factory: Any) -> None:
    w, seen = _writer(tmp_path, max_sessions=2)
    rs = [session_result_factory() for _ in range(5)]
    paths = [w.add(r) for r in rs]
    assert [p.name if p else None for p in paths] == [
        None,
        "rank-00004-000000.h5",
        None,
        "rank-00004-000001.h5",
        None,
    ]
    assert w.close() == tmp_path / "rank-00004-000002.h5"
    assert w.close() is None
    assert seen == [
        ("rank-00004-000000.h5", [rs[0].key, rs[1].key]),
        ("rank-00004-000001.h5", [rs[2].key, rs[3].key]),
        ("rank-00004-000002.h5", [rs[4].key]),
    ]
    with pytest.raises(RuntimeError, match="closed"):
        w.add(rs[0])


def test_rotates_by_bytes(tmp_path: Path, session_result_factory: Any) -> None:
    w, seen = _writer(tmp_path, max_bytes=1)
    w.add(session_result_factory())
    w.add(session_result_factory())
    assert w.buffered_sessions == 0
    assert w.commit() is None  # waits for the shards handed to the publisher
    assert len(seen) == 2


def test_rotates_by_traces_without_splitting_a_session(tmp_path: Path, session_result_factory: Any) -> None:
    w, seen = _writer(tmp_path, max_traces=5)
    rs = [session_result_factory(traces=n) for n in (2, 2, 3, 1)]
    assert [w.add(r) is not None for r in rs] == [False, False, True, False]
    w.close()
    assert [keys for _, keys in seen] == [[r.key for r in rs[:3]], [rs[3].key]]


def test_rotates_by_age_on_poll(tmp_path: Path, session_result_factory: Any) -> None:
    w, seen = _writer(tmp_path, max_age_s=0.05)
    assert w.poll() is None
    w.add(session_result_factory())
    wait_for(lambda: w.poll() is not None, 10, "age rotation")
    assert w.commit() is None
    assert len(seen) == 1


def test_restart_continues_sequence_and_never_overwrites(tmp_path: Path, session_result_factory: Any) -> None:
    w, _ = _writer(tmp_path)
    w.add(session_result_factory())
    w.close()
    (tmp_path / "rank-00004-000005.h5.tmp").write_bytes(b"torn")
    (tmp_path / "rank-00003-000009.h5").write_bytes(b"other rank")
    w2, seen = _writer(tmp_path)
    w2.add(session_result_factory())
    assert w2.commit() == tmp_path / "rank-00004-000006.h5"
    assert (tmp_path / "rank-00004-000005.h5.tmp").read_bytes() == b"torn"


def test_add_rejects_misaligned_or_lossy_arrays(tmp_path: Path, session_result_factory: Any) -> None:
    w, _ = _writer(tmp_path)
    r = session_result_factory()
    r.trajectory.traces[0].loss_mask = r.trajectory.traces[0].loss_mask[:-1]
    with pytest.raises(ValueError, match=rf"session '{r.key}' trace 0: response_ids, loss_mask"):
        w.add(r)
    r = session_result_factory()
    r.trajectory.traces[0].prompt_ids = r.trajectory.traces[0].prompt_ids.astype(np.int64)
    with pytest.raises(TypeError, match="prompt_ids: expected dtype int32, got int64"):
        w.add(r)
    r.trajectory.traces[0].prompt_ids = (r.trajectory.traces[0].prompt_ids % 30000).astype(np.int16)
    w.add(r)  # safe cast is fine
    assert w.buffered_sessions == 1


def _child(shards: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.unit.store.writer_child", str(shards), mode],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def test_sigkill_mid_write_leaves_only_committed_shards(tmp_path: Path) -> None:
    shards = tmp_path / "shards"
    proc = _child(shards, "loop")
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, "writer child exited early"
            assert time.monotonic() < deadline, "child never reached a second write"
            if len(list(shards.glob("*.h5"))) >= 2 and list(shards.glob("*.h5.tmp")):
                os.kill(proc.pid, signal.SIGSTOP)  # freeze it, then make sure it is still mid-write
                if list(shards.glob("*.h5.tmp")):
                    break
                os.kill(proc.pid, signal.SIGCONT)
            time.sleep(0.002)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        _stop(proc)
    assert proc.returncode == -signal.SIGKILL
    assert list(shards.glob("*.h5.tmp")), "the kill should have landed mid-write"
    committed = {line.split()[1] for line in (tmp_path / "committed.txt").read_text().splitlines()}
    reader = ShardReader(tmp_path)
    assert reader.problems == [] and reader.duplicates == []
    assert all(p.name.endswith(".h5") for p in reader.shards)
    keys = [r.key for r in reader.results()]
    assert len(keys) == len(set(keys)) == 3 * len(reader.shards)
    assert committed <= set(keys)  # a shard may be published just before on_commit ran
    idx = resume_index(tmp_path)
    assert idx.keys == set(keys) and idx.problems == [] and idx.shards == len(reader.shards)
    assert validate_paths(tmp_path)[1] == []
    # A restarted writer continues after the torn file and leaves it in place.
    tmp_names = {p.name for p in shards.glob("*.h5.tmp")}
    w = ShardWriter(shards, 1, ShardConfig(), {})
    assert w._seq > max(int(n.split("-")[2].split(".")[0]) for n in tmp_names)
    assert {p.name for p in shards.glob("*.h5.tmp")} == tmp_names


def test_sigterm_commits_buffer_then_exits(tmp_path: Path) -> None:
    shards = tmp_path / "shards"
    proc = _child(shards, "sigterm")
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        _stop(proc)
    assert proc.returncode == 128 + signal.SIGTERM
    assert [p.name for p in shards.iterdir()] == ["rank-00002-000000.h5"]
    assert sorted(resume_index(shards).keys) == [f"s{i}/0" for i in range(5)]


def test_write_behind_publishes_in_order_and_durable_before_on_commit(
    tmp_path: Path, session_result_factory: Any
) -> None:
    seen: list[tuple[str, bool, str]] = []

    def on_commit(path: Path, keys: list[str]) -> None:
        import threading

        seen.append(
            (
                path.name,
                path.is_file() and not path.with_suffix(".h5.tmp").exists(),
                threading.current_thread().name,
            )
        )

    w = ShardWriter(tmp_path, 1, ShardConfig(max_sessions=1), {"host": "n1"}, on_commit=on_commit)
    handed = [w.add(session_result_factory()) for _ in range(5)]
    assert w.close() is None  # every session was handed off by add
    assert [p.name for p in handed if p] == [f"rank-00001-00000{i}.h5" for i in range(5)]
    assert [name for name, _, _ in seen] == [p.name for p in handed if p]
    assert all(durable for _, durable, _ in seen)
    assert all(thread.startswith("shard-sync-1") for _, _, thread in seen)


def test_failed_publish_keeps_sessions_and_retries(
    tmp_path: Path, session_result_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import polar_hpc.store.writer as writer_mod

    real = writer_mod.write_shard
    calls = {"n": 0}

    def flaky(path: Path, *args: Any, **kwargs: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            path.write_bytes(b"half a shard")
            raise OSError(28, "No space left on device")
        real(path, *args, **kwargs)

    monkeypatch.setattr(writer_mod, "write_shard", flaky)
    w, seen = _writer(tmp_path, max_sessions=2)
    rs = [session_result_factory() for _ in range(3)]
    w.add(rs[0])
    w.add(rs[1])  # handed off; its publish fails in the publisher thread
    with pytest.raises(OSError, match="No space left"):
        w.commit()  # the next add/poll/commit/close raises it; the sessions are back in the buffer
    assert w.buffered_sessions == 2 and not list(tmp_path.glob("*.tmp")) and not seen
    w.add(rs[2])
    w.close()
    assert [k for _, keys in seen for k in keys] == [r.key for r in rs]
    assert [r.key for r in ShardReader(tmp_path).results()] == [r.key for r in rs]


def test_on_commit_error_does_not_republish(tmp_path: Path, session_result_factory: Any) -> None:
    def boom(path: Path, keys: list[str]) -> None:
        raise RuntimeError("subscriber down")

    w = ShardWriter(tmp_path, 2, ShardConfig(max_sessions=1), {"host": "n1"}, on_commit=boom)
    r = session_result_factory()
    w.add(r)
    assert w.close() is None and w.buffered_sessions == 0
    assert [x.key for x in ShardReader(tmp_path).results()] == [r.key]
