"""ShardWriter: buffers SessionResults, writes ``*.h5.tmp``, fsyncs, publishes by ``os.replace``.

One writer per rank and process; it never shares a file. Shard names are ``rank-{rank:05d}-{seq:06d}.h5``;
on restart ``seq`` continues after the highest existing shard (or leftover ``.tmp``) of that rank, so a
published shard is never overwritten. Rotation: ``max_sessions``, ``max_traces``, ``max_bytes`` (token arrays +
blobs) and ``max_age_s`` since the first buffered session, checked on ``add`` and ``poll``.

Four threads share the work, so that encoding, compression, copying and the disk all overlap:

- the caller's: checks each result and encodes its JSON blobs (``add``);
- ``shard-zstd``: compresses the blobs (zstd releases the GIL);
- ``shard-write``: writes a full buffer as ``.h5.tmp`` (write-behind);
- ``shard-sync``: fsyncs it, renames it, fsyncs the directory, then calls ``on_commit``; shards are
  published in sequence order.

A shard is committed when ``on_commit`` fires (or ``commit()`` returns): it is then durable and visible. At
most ``MAX_IN_FLIGHT`` shards are handed off and not yet published; the next rotation waits for the oldest,
which bounds memory to ``MAX_IN_FLIGHT + 1`` buffers.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from polar_hpc.config.run import ShardConfig
from polar_hpc.log import get_logger
from polar_hpc.store.encode import EncodedSession, compress_session, encode_session
from polar_hpc.store.schema import SHARD_SUFFIX, TMP_SUFFIX
from polar_hpc.store.shardwrite import fsync_dir, write_shard
from polar_hpc.wire.results import SessionResult

__all__ = ["OnCommit", "ShardWriter", "install_sigterm_commit", "next_seq", "shard_name", "write_shard"]

log = get_logger("store")

OnCommit = Callable[[Path, list[str]], None]
MAX_IN_FLIGHT = 2
SPACE_FACTOR = 2.0
SPACE_MARGIN = 64 * 1024
"""A shard is written only while its file system has ``SPACE_FACTOR`` × its encoded bytes + ``SPACE_MARGIN`` free
(HDF5's own layout comes on top of the data): HDF5 that runs out of space mid-write can crash the process
(measured: a segfault in h5py's object cleanup after ENOSPC), so a full disk is refused before HDF5 writes."""


def shard_name(rank: int, seq: int) -> str:
    return f"rank-{rank:05d}-{seq:06d}{SHARD_SUFFIX}"


def check_space(shards_dir: Path, nbytes: int) -> None:
    """Raise ``OSError(ENOSPC)`` naming the folder when a shard of ``nbytes`` encoded bytes may not fit."""
    st = os.statvfs(shards_dir)
    free = st.f_bavail * st.f_frsize
    need = int(SPACE_FACTOR * nbytes) + SPACE_MARGIN
    if free < need:
        raise OSError(errno.ENOSPC, f"No space left for a shard: {free} bytes free under {shards_dir}, "
                                    f"a shard of {nbytes} encoded bytes needs {need}")


def next_seq(shards_dir: Path, rank: int) -> int:
    pattern = re.compile(rf"^rank-{rank:05d}-(\d+){re.escape(SHARD_SUFFIX)}(\.tmp)?$")
    seqs = [int(m.group(1)) for p in shards_dir.iterdir() if (m := pattern.match(p.name))]
    leftovers = sorted(p.name for p in shards_dir.glob(f"rank-{rank:05d}-*{TMP_SUFFIX}"))
    if leftovers:
        log.warning("uncommitted shard files left by an earlier writer (kept, never read): %s", leftovers)
    return max(seqs) + 1 if seqs else 0


@dataclass
class _Batch:
    """One buffer handed to the writer threads: its sessions, their pending compressions, its final name."""

    sessions: list[EncodedSession]
    compressions: list[Future[int]]
    nbytes: int
    first_add: float | None
    seq: int
    final: Path


class ShardWriter:
    """Buffers results in memory and publishes them as whole shard files.

    Not thread-safe: call it from one thread (an asyncio gateway may run it in an executor, one call at a
    time). ``close()`` commits and may be called from a SIGTERM handler: see ``install_sigterm_commit``.

    ``add`` returns the path of the shard it handed to the writer threads when it triggered a rotation; that
    shard is durable once ``on_commit`` fires. ``commit()`` publishes the buffer and waits for it and every
    shard handed off before. A publish that fails loses nothing: its sessions go back in front of the
    buffer, and the error is raised by the next ``add``/``poll``/``commit``/``close``.
    ``buffered_bytes`` counts blobs not yet compressed at their JSON size (an upper bound: rotation by
    ``max_bytes`` may come slightly early, never late).
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
        self._pending: list[Future[int]] = []
        self._bytes = 0
        self._traces = 0
        self._first_add: float | None = None
        self._closed = False
        self._depth = 0
        self._exit_code: int | None = None
        self._exiting = False
        self._zstd: ThreadPoolExecutor | None = None
        self._writer: ThreadPoolExecutor | None = None
        self._syncer: ThreadPoolExecutor | None = None
        self._inflight: deque[tuple[_Batch, Future[Future[None]]]] = deque()
        self.committed: list[Path] = []

    @property
    def buffered_sessions(self) -> int:
        return len(self._buffer)

    @property
    def buffered_bytes(self) -> int:
        return self._bytes

    def holds(self, key: str) -> bool:
        """Whether session ``key`` waits in the buffer (an ``add`` that raised a failed publish still buffered
        it: its result is not lost, it goes out with the next shard)."""
        return any(s.result.key == key for s in self._buffer)

    def add(self, result: SessionResult) -> Path | None:
        """Buffer one result; returns the shard path if this add handed a full buffer to the writer threads."""
        with self._critical():
            if self._closed:
                raise RuntimeError(
                    f"ShardWriter for rank {self.rank} is closed; cannot add session {result.key!r}"
                )
            enc = encode_session(result, compress_blobs=False)
            self._bytes += enc.nbytes  # before the submit: the zstd thread changes enc.nbytes, returns the change
            if self._zstd is None:
                self._zstd = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"shard-zstd-{self.rank}")
            self._pending.append(self._zstd.submit(compress_session, enc))
            self._buffer.append(enc)
            self._traces += len(enc.prompts)
            if self._first_add is None:
                self._first_add = time.monotonic()
            return self.poll()

    def due(self) -> bool:
        if not self._buffer:
            return False
        self._settle(wait=False)
        c = self.config
        age = time.monotonic() - (self._first_add or time.monotonic())
        return (
            len(self._buffer) >= c.max_sessions
            or self._traces >= c.max_traces
            or self._bytes >= c.max_bytes
            or age >= c.max_age_s
        )

    def poll(self) -> Path | None:
        """Hand the buffer to the writer threads if a rotation limit is reached (call it periodically so that
        ``max_age_s`` holds without adds); raises the error of a failed earlier publish."""
        with self._critical():
            self._collect(keep=None)
            return self.commit(wait=False) if self.due() else None

    def commit(self, *, wait: bool = True) -> Path | None:
        """Publish what is buffered now as one shard; None when the buffer is empty.

        ``wait=True`` returns once it and every shard handed off before are durable; ``wait=False`` hands the
        buffer to the writer thread and returns its future path (waiting first if ``MAX_IN_FLIGHT`` shards are
        in flight).
        """
        with self._critical():
            if not self._buffer:
                self._collect(keep=0 if wait else None)
                return None
            self._collect(keep=MAX_IN_FLIGHT - 1)
            path = self._hand_off()
            if wait:
                self._collect(keep=0)
            return path

    def close(self) -> Path | None:
        """Commit what is buffered, wait for it, and refuse further adds. Idempotent."""
        if self._closed:
            return None
        with self._critical():
            path = self.commit()
            self._closed = True
            for pool in (self._zstd, self._writer, self._syncer):
                if pool is not None:
                    pool.shutdown(wait=True)  # idle: commit waited for every compression and publish
            self._zstd = self._writer = self._syncer = None
            return path

    def request_exit(self, code: int) -> None:
        """From a signal handler: commit now, or when the writer call in progress returns, then exit ``code``."""
        if self._exiting:
            return
        if self._depth:
            self._exit_code = code
            return
        self._exit(code)

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------------------------
    @contextmanager
    def _critical(self) -> Iterator[None]:
        """Marks a writer call in progress: a SIGTERM landing inside it (maybe inside an executor's lock)
        is deferred to its end, then commits and exits (even if the call failed)."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0 and self._exit_code is not None and not self._exiting:
                self._exit(self._exit_code)

    def _exit(self, code: int) -> None:
        """Commit what is buffered (one attempt), then exit ``code``."""
        self._exiting, self._exit_code = True, None
        try:
            self.close()
        except Exception:
            log.exception("exiting with %d sessions not committed", self.buffered_sessions)
        raise SystemExit(code)

    def _settle(self, *, wait: bool) -> None:
        """Account finished compressions in ``_bytes``; ``wait``: all of them (re-raises a worker error)."""
        keep: list[Future[int]] = []
        for fut in self._pending:
            if wait or fut.done():
                self._bytes += fut.result()
            else:
                keep.append(fut)
        self._pending = keep

    def _hand_off(self) -> Path:
        seq = self._seq
        while (self.shards_dir / shard_name(self.rank, seq)).exists():
            seq += 1
        batch = _Batch(
            sessions=self._buffer,
            compressions=self._pending,
            nbytes=self._bytes,
            first_add=self._first_add,
            seq=seq,
            final=self.shards_dir / shard_name(self.rank, seq),
        )
        self._seq = seq + 1
        self._buffer, self._pending, self._bytes, self._traces, self._first_add = [], [], 0, 0, None
        if self._writer is None or self._syncer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"shard-write-{self.rank}")
            self._syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"shard-sync-{self.rank}")
        self._inflight.append((batch, self._writer.submit(self._write, batch, self._syncer)))
        return batch.final

    def _collect(self, *, keep: int | None) -> None:
        """Collect the shards in flight, oldest first: the finished ones, then (``keep`` not None) wait until
        at most ``keep`` remain. A failed one puts its sessions back in front of the buffer and raises."""
        while self._inflight:
            batch, fut = self._inflight[0]
            if not _finished(fut) and (keep is None or len(self._inflight) <= keep):
                return
            self._inflight.popleft()
            try:
                fut.result().result()
            except BaseException:
                self._buffer[:0] = batch.sessions
                self._bytes += batch.nbytes  # uncompressed sizes where known: an upper bound
                self._traces += sum(len(s.prompts) for s in batch.sessions)
                if batch.first_add is not None:
                    self._first_add = min(batch.first_add, self._first_add or batch.first_add)
                log.error(
                    "shard %s not published; its %d sessions stay buffered",
                    batch.final.name,
                    len(batch.sessions),
                )
                raise

    def _write(self, batch: _Batch, syncer: ThreadPoolExecutor) -> Future[None]:
        """Writer thread: wait for the compressions, write the tmp file; hand it to the sync thread."""
        t0 = time.perf_counter()
        nbytes = batch.nbytes + sum(f.result() for f in batch.compressions)
        tmp = batch.final.with_name(batch.final.name[: -len(SHARD_SUFFIX)] + TMP_SUFFIX)
        check_space(self.shards_dir, nbytes)
        try:
            write_shard(
                tmp,
                batch.sessions,
                producer=self.producer,
                rank=self.rank,
                seq=batch.seq,
                config=self.config,
                fsync=False,
            )
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return syncer.submit(self._sync, batch, tmp, t0, nbytes)

    def _sync(self, batch: _Batch, tmp: Path, t0: float, nbytes: int) -> None:
        """Sync thread: make the tmp file durable, publish it by rename, make the rename durable, report."""
        try:
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, batch.final)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        fsync_dir(self.shards_dir)
        self.committed.append(batch.final)
        keys = [s.result.key for s in batch.sessions]
        log.info(
            "committed %s: %d sessions, %.1f MB in %.2fs",
            batch.final.name,
            len(keys),
            nbytes / 1e6,
            time.perf_counter() - t0,
        )
        if self.on_commit is not None:
            try:
                self.on_commit(batch.final, keys)
            except Exception:  # the shard is published: its sessions must not be written again
                log.exception("on_commit callback failed for %s", batch.final.name)


def _finished(fut: Future[Future[None]]) -> bool:
    if not fut.done():
        return False
    return fut.exception() is not None or fut.result().done()


def install_sigterm_commit(writer: ShardWriter) -> None:
    """Install a SIGTERM handler (main thread) that commits the buffer, then exits with 143.

    An asyncio process may instead call ``writer.close()`` from its own ``loop.add_signal_handler`` callback.
    A SIGTERM that lands inside a writer call lets that call finish first.
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        log.info("SIGTERM: committing %d buffered sessions", writer.buffered_sessions)
        writer.request_exit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
