"""The writer compresses blobs in a worker thread: same bytes as inline compression, thread stopped on close."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from polar_hpc.config.run import ShardConfig
from polar_hpc.store.encode import compress_session, encode_session
from polar_hpc.store.reader import ShardReader
from polar_hpc.store.schema import BLOB_COMPRESS_MIN
from polar_hpc.store.writer import ShardWriter
from tests.fixtures.trajectories import make_session_result


def _big_result(seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    return make_session_result(rng, task_id=f"task-{seed}", sample_index=0, traces=2, turns=4)


def test_deferred_compression_gives_the_inline_bytes() -> None:
    r = _big_result()
    inline = encode_session(r)
    deferred = encode_session(r, compress_blobs=False)
    assert all(b[:1] == b"{" for b in deferred.trace_blobs)
    assert max(len(b) for b in deferred.trace_blobs) >= BLOB_COMPRESS_MIN  # something to compress
    delta = compress_session(deferred)
    assert delta < 0
    assert deferred.trace_blobs == inline.trace_blobs
    assert deferred.session_blob == inline.session_blob
    assert deferred.nbytes == inline.nbytes


def _zstd_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("shard-zstd-7")]


def test_writer_round_trips_and_stops_its_worker(tmp_path: Path) -> None:
    rs = [_big_result(i) for i in range(5)]
    w = ShardWriter(tmp_path, 7, ShardConfig(max_sessions=2), {"host": "n1"})
    for r in rs:
        w.add(r)
    assert _zstd_threads(), "compression runs in a worker thread"
    w.close()
    assert not _zstd_threads()
    assert len(w.committed) == 3
    back = list(ShardReader(tmp_path).results())
    assert [b.key for b in back] == [r.key for r in rs]
    for a, b in zip(rs, back, strict=True):
        for ta, tb in zip(a.trajectory.traces, b.trajectory.traces, strict=True):
            assert ta.prompt_messages == tb.prompt_messages
            assert ta.response_messages == tb.response_messages
            assert np.array_equal(ta.prompt_ids, tb.prompt_ids)


def test_buffered_bytes_settle_to_compressed_size(tmp_path: Path) -> None:
    r = _big_result()
    w = ShardWriter(tmp_path, 7, ShardConfig(), {"host": "n1"})
    w.add(r)
    w._settle(wait=True)
    assert w.buffered_bytes == encode_session(r).nbytes
    w.close()


_CHILD = """
import signal, sys
from pathlib import Path
import numpy as np
from polar_hpc.config.run import ShardConfig
from polar_hpc.store.writer import ShardWriter, install_sigterm_commit
from tests.fixtures.trajectories import make_session_result

rng = np.random.default_rng(0)
w = ShardWriter(Path(sys.argv[1]), 7, ShardConfig(), {"host": "n1"})
install_sigterm_commit(w)
w.add(make_session_result(rng, task_id="a", sample_index=0, traces=1, turns=2))
pool = w._zstd
real_submit = pool.submit

def submit(*args, **kwargs):  # SIGTERM lands while the executor's own lock is held, as it may in submit
    fut = real_submit(*args, **kwargs)
    with pool._shutdown_lock:
        signal.raise_signal(signal.SIGTERM)
        for _ in range(1000):
            pass
    return fut

pool.submit = submit
w.add(make_session_result(rng, task_id="b", sample_index=0, traces=1, turns=2))
"""


def test_sigterm_during_submit_commits_and_exits(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[3]
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path)], cwd=repo, timeout=60, capture_output=True, text=True
    )
    assert proc.returncode == 143, proc.stderr
    # the SIGTERM waits for the add it interrupted, so "b" is buffered and committed too
    assert [r.task_id for r in ShardReader(tmp_path).results()] == ["a", "b"]


_FAILING_CHILD = """
import os, signal, sys
from pathlib import Path
import numpy as np
import polar_hpc.store.writer as writer_mod
from polar_hpc.config.run import ShardConfig
from polar_hpc.store.writer import ShardWriter, install_sigterm_commit
from tests.fixtures.trajectories import make_session_result

def full_disk(*args, **kwargs):  # runs on the shard-write thread; the handler runs on the main thread
    os.kill(os.getpid(), signal.SIGTERM)
    raise OSError(28, "No space left on device")

writer_mod.write_shard = full_disk
w = ShardWriter(Path(sys.argv[1]), 7, ShardConfig(), {"host": "n1"})
install_sigterm_commit(w)
w.add(make_session_result(np.random.default_rng(0), task_id="a", sample_index=0, traces=1, turns=2))
try:
    w.commit()  # the SIGTERM lands while commit waits; the commit fails
except OSError:
    sys.exit(3)  # not reached: the deferred SIGTERM exits, whatever the call it waited for raised
sys.exit(4)
"""


def test_deferred_sigterm_exits_even_when_the_commit_fails(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[3]
    proc = subprocess.run(
        [sys.executable, "-c", _FAILING_CHILD, str(tmp_path)], cwd=repo, timeout=60, capture_output=True, text=True
    )
    assert proc.returncode == 143, proc.stderr
    assert proc.stderr.count("exiting with 1 sessions not committed") == 1
    assert proc.stderr.count("not published") == 2  # the interrupted commit, then one last try at exit
    assert not list(tmp_path.glob("*.h5*"))
