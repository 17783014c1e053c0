"""ShardReader: committed shards only, deduped by session key, filtered, token columns read whole.

The first access scans every shard's session table (no token data) to validate the layout and decide
duplicates: a key seen in an earlier shard of the same run (its shards folder; read order, see ``resolve_shards``)
is skipped later and listed in ``duplicates``; runs read together keep each its own sessions (``runs`` counts
them). A shard that fails is named in ``problems`` and skipped; files are never touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec
import numpy as np

from polar_hpc.errors import PolarError
from polar_hpc.log import get_logger
from polar_hpc.store.encode import blob_items, decode_session_blob
from polar_hpc.store.rebuild import Loaded
from polar_hpc.store.repo import repo_of
from polar_hpc.store.schema import SHARD_SUFFIX
from polar_hpc.store.select import TraceSelect
from polar_hpc.store.sessions import SessionTable, read_sessions
from polar_hpc.store.shardfile import (
    ShardError,
    open_shard,
    read_session_blobs,
    read_tokens,
    read_traces,
    resolve_shards,
)
from polar_hpc.store.traceview import TraceView
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.rundir import shards_of

log = get_logger("store")

PathsArg = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]


class EmptySelection(PolarError, LookupError):
    """Nothing matched: the message names the paths and the filter."""

    exit_code = 1


class MissingShards(PolarError, FileNotFoundError):
    """A path given to read does not exist, or no committed shard is under the paths."""


def require_shards(paths: PathsArg) -> list[Path]:
    """The committed shard files under ``paths``; ``MissingShards`` names a path that does not exist, or
    where it looked when there is none."""
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    missing = [str(p) for p in items if not Path(p).exists()]
    if missing:
        raise MissingShards(f"no such file or directory: {', '.join(missing)} (expected run directories, shard "
                            f"directories or *{SHARD_SUFFIX} files)")
    files, problems = resolve_shards(items)
    if not files:
        where = "; ".join(_looked_in(Path(p)) for p in items) or "no paths given"
        detail = f" ({'; '.join(problems)})" if problems else ""
        raise MissingShards(f"no committed shards (*{SHARD_SUFFIX}) found: looked in {where}{detail}")
    return files


def _looked_in(p: Path) -> str:
    if p.is_dir():
        return str(shards_of(p))
    return str(p)


class Duplicate(msgspec.Struct, frozen=True):
    key: str
    kept: str
    """Shard whose copy is read."""
    skipped: str


class _Indexed(msgspec.Struct):
    path: Path
    table: SessionTable
    first: np.ndarray
    """True for the sessions this shard contributes (not seen in an earlier shard)."""


class ShardReader:
    """Committed shards under ``paths`` (run dirs, shard dirs or files); ``must_exist`` raises ``MissingShards``
    for a path that does not exist or when no shard is found (otherwise they are listed in ``problems``)."""

    def __init__(self, paths: PathsArg, *, must_exist: bool = False) -> None:
        if must_exist:
            require_shards(paths)
        self.files, self._resolve_problems = resolve_shards(paths)
        self._index: list[_Indexed] | None = None
        self._problems: list[str] = []
        self._duplicates: list[Duplicate] = []

    @property
    def runs(self) -> dict[str, int]:
        """Sessions read (first copies) per run, by its shards folder, in read order."""
        out: dict[str, int] = {}
        for s in self._scan():
            run = str(s.path.parent)
            out[run] = out.get(run, 0) + int(s.first.sum())
        return out

    @property
    def problems(self) -> list[str]:
        """``"<file>: <what is wrong>"`` for every shard skipped (scans session tables on first use)."""
        self._scan()
        return self._resolve_problems + self._problems

    @property
    def duplicates(self) -> list[Duplicate]:
        self._scan()
        return self._duplicates

    @property
    def shards(self) -> list[Path]:
        """Shards that passed validation, in read order."""
        return [s.path for s in self._scan()]

    def session_tables(self) -> Iterator[tuple[Path, SessionTable, np.ndarray]]:
        """(shard, table, first-copy mask) for each valid shard."""
        for s in self._scan():
            yield s.path, s.table, s.first

    def _scan(self) -> list[_Indexed]:
        if self._index is not None:
            return self._index
        index: list[_Indexed] = []
        owner: dict[tuple[Path, str], Path] = {}
        """(run's shards folder, key) -> the shard read: keys repeat across runs, not within one."""
        for path in self.files:
            try:
                with open_shard(path) as f:
                    table = read_sessions(f)
            except ShardError as err:
                self.report(str(err))
                continue
            except (OSError, KeyError, ValueError) as err:
                self.report(f"{path}: unreadable session table: {err}")
                continue
            first = np.ones(len(table), dtype=bool)
            run = path.parent.resolve()
            for i, key in enumerate(table.keys):
                prev = owner.get((run, key))
                if prev is None:
                    owner[(run, key)] = path
                else:
                    first[i] = False
                    self._duplicates.append(Duplicate(key, str(prev), str(path)))
            index.append(_Indexed(path, table, first))
        if self._duplicates:
            log.warning("%d duplicate sessions across shards of one run; the first copy is read",
                        len(self._duplicates))
        self._index = index
        return index

    def report(self, problem: str) -> None:
        log.warning("skipping shard: %s", problem)
        self._problems.append(problem)

    def selected(self, flt: TraceSelect | None) -> Iterator[tuple[Path, SessionTable, np.ndarray]]:
        """(shard, table, rows) of the sessions ``flt``'s session conditions keep (first copies only).

        Trace conditions (``trainable_only``, ``policies``) are the caller's: see ``traces()``.
        """
        for s, rows in self._selected(flt):
            yield s.path, s.table, rows

    def _selected(self, flt: TraceSelect | None) -> Iterator[tuple[_Indexed, np.ndarray]]:
        for s in self._scan():
            keep = s.first & flt.sessions(s.table) if flt is not None else s.first
            rows = np.flatnonzero(keep)
            if rows.size and flt is not None and flt.needs_session_blobs:
                rows = self._by_metadata(s, rows, flt)
            if rows.size:
                yield s, rows

    def _by_metadata(self, s: _Indexed, rows: np.ndarray, flt: TraceSelect) -> np.ndarray:
        try:
            with open_shard(s.path, check=False) as f:
                sblobs = read_session_blobs(f)
            metas = [decode_session_blob(sblobs[row]).metadata for row in rows.tolist()]
        except (ShardError, OSError, KeyError, ValueError) as err:
            self.report(f"{s.path}: unreadable session blobs: {err}")
            return rows[:0]
        return np.array([row for row, meta in zip(rows.tolist(), metas, strict=True)
                         if flt.session_metadata(meta, repo_of(s.table.task_ids[row], meta))], dtype=np.int64)

    def traces(self, flt: TraceSelect | None = None, *, blobs: bool = True) -> Iterator[TraceView]:
        """Every trace of the selected sessions (and, with trace conditions, traces); token arrays are views
        into whole-column reads.

        ``blobs=False`` skips reading messages/tools/metadata (faster; ``TraceView.decode`` then raises).
        """
        by_trace = flt is not None and flt.selects_traces
        for s, rows in self._selected(flt):
            try:
                with open_shard(s.path, check=False) as f:
                    tr = read_traces(f, blobs=blobs)
                    tok = read_tokens(f)
            except (ShardError, OSError, KeyError, ValueError) as err:
                self.report(f"{s.path}: unreadable trace data: {err}")
                continue
            t = s.table
            po, ro, to = tr.prompt_offsets.tolist(), tr.response_offsets.tolist(), t.trace_offsets.tolist()
            tblobs = blob_items(tr.blob, tr.blob_offsets) if blobs else None
            fields = tr.fields
            trainable, policy = fields["trainable"], fields["policy"]
            k = tok.top_width
            for row in rows.tolist():
                session = t.row(row)
                for j, ti in enumerate(range(to[row], to[row + 1])):
                    if by_trace and flt is not None and not flt.trace(trainable[ti], policy[ti]):
                        continue
                    a, b, c, d = po[ti], po[ti + 1], ro[ti], ro[ti + 1]
                    yield TraceView(
                        shard=s.path,
                        trace_index=j,
                        prompt_ids=tok.prompt_ids[a:b],
                        response_ids=tok.response_ids[c:d],
                        loss_mask=tok.loss_mask[c:d],
                        response_logprobs=tok.response_logprobs[c:d],
                        response_versions=tok.response_versions[c:d],
                        response_top_ids=tok.response_top_ids[c * k:d * k].reshape(d - c, k),
                        response_top_logprobs=tok.response_top_logprobs[c * k:d * k].reshape(d - c, k),
                        blob=tblobs[ti] if tblobs is not None else None,
                        session=session,
                        columns=fields,
                        row=ti,
                    )

    def results(self, flt: TraceSelect | None = None) -> Iterator[SessionResult]:
        """The selected sessions rebuilt as SessionResults (arrays are copies; equal to what was written).

        Whole sessions: a filter with trace conditions (``trainable_only``, ``policies``) raises ValueError.
        """
        if flt is not None and flt.selects_traces:
            raise ValueError(f"results() reads whole sessions; {flt.describe()} selects single traces "
                             "(trainable_only / policies): use traces()")
        for s, rows in self._selected(flt):
            try:
                with open_shard(s.path, check=False) as f:
                    data = Loaded.read(f)
            except (ShardError, OSError, KeyError, ValueError) as err:
                self.report(f"{s.path}: unreadable trace data: {err}")
                continue
            for row in rows.tolist():
                try:
                    result = data.rebuild(s.table, row)
                except (msgspec.DecodeError, ValueError) as err:
                    self.report(f"{s.path}: session {s.table.keys[row]!r}: corrupt blob: {err}")
                    continue
                yield result
