"""ShardWriter: buffers SessionResults, writes ``*.h5.tmp``, fsyncs, publishes by ``os.replace``.

One writer per rank and process; it never shares a file. Shard names are ``rank-{rank:05d}-{seq:06d}.h5``;
on restart ``seq`` continues after the highest existing shard (or leftover ``.tmp``) of that rank, so a
published shard is never overwritten. Rotation: ``max_sessions``, ``max_bytes`` (token arrays + blobs) and
``max_age_s`` since the first buffered session, checked on ``add`` and ``poll``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Any

import h5py
import numpy as np

from polar_hpc.config.run import ShardConfig
from polar_hpc.log import get_logger
from polar_hpc.store.encode import (
    EncodedSession,
    build_columns,
    compress_session,
    encode_session,
    raw_pieces,
)
from polar_hpc.store.schema import COLUMNS, SCHEMA_NAME, SCHEMA_VERSION, SHARD_SUFFIX, TMP_SUFFIX
from polar_hpc.wire.records import SessionResult

log = get_logger("store")

_IOV_MAX = min(os.sysconf("SC_IOV_MAX"), 1024) if hasattr(os, "sysconf") else 1024
_SMALL_PIECE = 64 * 1024

OnCommit = Callable[[Path, list[str]], None]


def shard_name(rank: int, seq: int) -> str:
    return f"rank-{rank:05d}-{seq:06d}{SHARD_SUFFIX}"


def next_seq(shards_dir: Path, rank: int) -> int:
    pattern = re.compile(rf"^rank-{rank:05d}-(\d+){re.escape(SHARD_SUFFIX)}(\.tmp)?$")
    seqs = [int(m.group(1)) for p in shards_dir.iterdir() if (m := pattern.match(p.name))]
    leftovers = sorted(p.name for p in shards_dir.glob(f"rank-{rank:05d}-*{TMP_SUFFIX}"))
    if leftovers:
        log.warning("uncommitted shard files left by an earlier writer (kept, never read): %s", leftovers)
    return max(seqs) + 1 if seqs else 0


def _compression(config: ShardConfig) -> dict[str, Any]:
    if config.compression == "none":
        return {}
    return {"compression": config.compression, "chunks": True, "shuffle": config.compression == "gzip"}


def write_shard(
    path: Path,
    sessions: Sequence[EncodedSession],
    *,
    producer: dict[str, str],
    rank: int,
    seq: int,
    config: ShardConfig | None = None,
    fsync: bool = True,
) -> None:
    """Write one complete shard file at ``path`` and fsync it (no rename: the caller publishes).

    Without HDF5 compression, the big columns (tokens, trace blobs) are allocated by HDF5 (contiguous, no
    fill) and their bytes are then written with ``pwritev`` straight from each trace's pieces: no
    concatenated copy, no HDF5 data path.
    """
    opts = _compression(config) if config is not None else {}
    pieces = raw_pieces(sessions)
    cols = build_columns(sessions, tokens=bool(opts))
    raw: list[tuple[int, list[np.ndarray]]] = []
    with h5py.File(path, "w") as f:
        f.attrs["schema"] = SCHEMA_NAME
        f.attrs["schema_version"] = SCHEMA_VERSION
        f.attrs["producer"] = json.dumps(producer, sort_keys=True)
        f.attrs["rank"] = rank
        f.attrs["seq"] = seq
        f.attrs["created_unix"] = time.time()
        f.attrs["sessions"] = len(sessions)
        f.attrs["traces"] = int(cols["traces/session"].shape[0])
        for group in ("tokens", "traces", "sessions"):
            f.create_group(group)
        for name, arr in cols.items():
            if opts and name.startswith("tokens/") and arr.size:
                f.create_dataset(name, data=arr, **opts)
            else:
                _create(f, name, arr)
        if not opts:
            for name, parts in pieces.items():
                n = sum(p.shape[0] for p in parts)
                dtype = np.dtype(COLUMNS[name].dtype).newbyteorder("<")
                dsid = _create(f, name, np.empty(0, dtype=dtype), shape=n, dcpl=_raw_dcpl())
                if n:
                    raw.append((dsid.get_offset(), parts))
    fd = os.open(path, os.O_WRONLY)
    try:
        for offset, parts in raw:
            _pwrite_all(fd, parts, offset)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _create(f: h5py.File, name: str, arr: np.ndarray, *, shape: int | None = None, dcpl: Any = None) -> Any:
    """A contiguous 1-D dataset through the low-level API (the high-level one costs ~3x more per dataset).

    Writes ``arr`` unless ``shape`` is given (then only allocates ``shape`` items of ``arr.dtype``).
    """
    dtype = arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else arr.dtype
    space = h5py.h5s.create_simple((arr.shape[0] if shape is None else shape,))
    dsid = h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(dtype), space, dcpl=dcpl)
    if shape is None and arr.size:
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(arr, dtype=dtype))
    return dsid


def _raw_dcpl() -> Any:
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    return dcpl


def _pwrite_all(fd: int, parts: list[np.ndarray], offset: int) -> None:
    """Write the arrays back to back at ``offset``; many small arrays are joined first (cheaper than iovecs)."""
    parts = [np.ascontiguousarray(p, dtype=p.dtype.newbyteorder("<")) for p in parts if p.shape[0]]
    if len(parts) > 64 and sum(p.nbytes for p in parts) < len(parts) * _SMALL_PIECE:
        parts = [np.concatenate(parts)]
    bufs = [p.data.cast("B") for p in parts]
    i = 0
    while i < len(bufs):
        written = os.pwritev(fd, bufs[i : i + _IOV_MAX], offset)
        offset += written
        while i < len(bufs) and written >= len(bufs[i]):
            written -= len(bufs[i])
            i += 1
        if written:  # short write: the rest of bufs[i] goes next
            bufs[i] = bufs[i][written:]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ShardWriter:
    """Buffers results in memory and publishes them as whole shard files.

    Not thread-safe: call it from one thread (an asyncio gateway may run ``commit`` in an executor, as
    long as no ``add`` runs meanwhile). ``close()`` commits and may be called from a SIGTERM handler:
    see ``install_sigterm_commit``.

    ``add`` encodes the JSON blobs in the caller's thread and hands their zstd compression to one worker
    thread (zstd releases the GIL), so compressing one session overlaps encoding the next; ``commit``
    waits for the outstanding compressions. ``buffered_bytes`` counts blobs not yet compressed at their
    JSON size (an upper bound: rotation by ``max_bytes`` may come slightly early, never late).
    """

    def __init__(
        self,
        shards_dir: str | os.PathLike[str],
        rank: int,
        config: ShardConfig,
        producer: dict[str, str],
        on_commit: OnCommit | None = None,
    ) -> None:
        self.shards_dir = Path(shards_dir)
        self.shards_dir.mkdir(parents=True, exist_ok=True)
        self.rank = rank
        self.config = config
        self.producer = dict(producer)
        self.on_commit = on_commit
        self._seq = next_seq(self.shards_dir, rank)
        self._buffer: list[EncodedSession] = []
        self._bytes = 0
        self._first_add: float | None = None
        self._closed = False
        self._busy = False
        self._exit_after_commit: int | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[Future[int]] = []
        self._submitting = False
        self.committed: list[Path] = []

    @property
    def buffered_sessions(self) -> int:
        return len(self._buffer)

    @property
    def buffered_bytes(self) -> int:
        return self._bytes

    def add(self, result: SessionResult) -> Path | None:
        """Buffer one result; returns the shard path if this add triggered a commit."""
        if self._closed:
            raise RuntimeError(
                f"ShardWriter for rank {self.rank} is closed; cannot add session {result.key!r}"
            )
        enc = encode_session(result, compress_blobs=False)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"shard-zstd-{self.rank}")
        self._submitting = True  # a SIGTERM handler must not shut the pool down inside submit (its lock)
        try:
            self._pending.append(self._pool.submit(compress_session, enc))
        finally:
            self._submitting = False
        self._buffer.append(enc)
        self._bytes += enc.nbytes
        if self._first_add is None:
            self._first_add = time.monotonic()
        return self.poll()

    def _settle(self, *, wait: bool) -> None:
        """Account finished compressions in ``_bytes``; ``wait``: all of them (re-raises a worker error)."""
        keep: list[Future[int]] = []
        for fut in self._pending:
            if wait or fut.done():
                self._bytes += fut.result()
            else:
                keep.append(fut)
        self._pending = keep

    def due(self) -> bool:
        if not self._buffer:
            return False
        self._settle(wait=False)
        c = self.config
        age = time.monotonic() - (self._first_add or time.monotonic())
        return len(self._buffer) >= c.max_sessions or self._bytes >= c.max_bytes or age >= c.max_age_s

    def poll(self) -> Path | None:
        """Commit if a rotation limit is reached (call periodically so ``max_age_s`` holds without adds)."""
        return self.commit() if self.due() else None

    def commit(self) -> Path | None:
        """Publish what is buffered now as one shard; None when the buffer is empty."""
        if not self._buffer:
            return None
        self._busy = True
        try:
            path = self._publish()
        finally:
            self._busy = False
        if self._exit_after_commit is not None:
            code, self._exit_after_commit = self._exit_after_commit, None
            self.close()
            raise SystemExit(code)
        return path

    def _publish(self) -> Path:
        seq = self._seq
        while (self.shards_dir / shard_name(self.rank, seq)).exists():
            seq += 1
        final = self.shards_dir / shard_name(self.rank, seq)
        tmp = final.with_name(final.name[: -len(SHARD_SUFFIX)] + TMP_SUFFIX)
        sessions = self._buffer
        t0 = time.perf_counter()
        self._settle(wait=True)
        try:
            write_shard(tmp, sessions, producer=self.producer, rank=self.rank, seq=seq, config=self.config)
            os.replace(tmp, final)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(self.shards_dir)
        self._seq = seq + 1
        keys = [s.result.key for s in sessions]
        nbytes = self._bytes
        self._buffer, self._bytes, self._first_add = [], 0, None
        self.committed.append(final)
        log.info(
            "committed %s: %d sessions, %.1f MB in %.2fs",
            final.name,
            len(keys),
            nbytes / 1e6,
            time.perf_counter() - t0,
        )
        if self.on_commit is not None:
            self.on_commit(final, keys)
        return final

    def close(self) -> Path | None:
        """Commit what is buffered and refuse further adds. Idempotent."""
        if self._closed:
            return None
        path = self.commit()
        self._closed = True
        if self._pool is not None and not self._submitting:
            self._pool.shutdown(wait=True)  # idle: commit waited for every compression
            self._pool = None
        return path

    def request_exit(self, code: int) -> None:
        """From a signal handler: commit now, or right after the commit in progress, then exit ``code``."""
        if self._busy:
            self._exit_after_commit = code
            return
        self.close()
        raise SystemExit(code)

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def install_sigterm_commit(writer: ShardWriter) -> None:
    """Install a SIGTERM handler (main thread) that commits the buffer, then exits with 143.

    An asyncio process may instead call ``writer.close()`` from its own ``loop.add_signal_handler`` callback.
    A SIGTERM that lands during a commit lets that commit finish first.
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        log.info("SIGTERM: committing %d buffered sessions", writer.buffered_sessions)
        writer.request_exit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
