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
from typing import Any, Generic, TypeVar

import msgspec
import numpy as np

from polar_hpc.errors import PolarError
from polar_hpc.log import get_logger
from polar_hpc.store.encode import (
    blob_items,
    decode_session_blob,
    decode_trace_blob,
    rebuild_session,
    rebuild_trace,
)
from polar_hpc.store.repo import repo_of
from polar_hpc.store.schema import SHARD_SUFFIX, TraceBlob, legacy_keys
from polar_hpc.store.select import TraceSelect
from polar_hpc.store.shardfile import (
    SessionTable,
    Shard,
    ShardError,
    Tokens,
    TraceTable,
    open_shard,
    read_session_blobs,
    read_sessions,
    read_tokens,
    read_traces,
    resolve_shards,
)
from polar_hpc.wire.records import SessionResult, TraceStatus
from polar_hpc.wire.rundir import shards_of

log = get_logger("store")

T = TypeVar("T")
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


class _Field(Generic[T]):
    """A ``TraceView`` attribute read from its ``fields`` (by the attribute's name)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, view: TraceView, owner: type) -> T:
        value: T = view.columns[self.name][view.row]
        return value


class TraceView(msgspec.Struct, kw_only=True):
    """One trace with its token arrays as views into the shard's columns (valid while you hold them)."""

    shard: Path
    key: str
    task_id: str
    sample_index: int
    attempt: int
    trace_index: int
    status: TraceStatus
    session_reward: float
    harness: str
    model: str
    policy_version: int
    prompt_ids: np.ndarray
    response_ids: np.ndarray
    loss_mask: np.ndarray
    response_logprobs: np.ndarray
    response_versions: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    """The weight version that sampled each token (-1: none, or a shard older than schema 4)."""
    response_top_ids: np.ndarray = msgspec.field(default_factory=lambda: np.zeros((0, 0), dtype=np.int32))
    """(n, k): the sampler's k most likely ids per response token (k 0: not recorded; -1 where none)."""
    response_top_logprobs: np.ndarray = msgspec.field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    """(n, k) float32: their logprobs (NaN where none)."""
    blob: memoryview | None
    """Compressed JSON of messages, tools, metadata: ``decode()`` it when needed (None: read without blobs)."""
    columns: dict[str, list[Any]]
    """The shard's ``schema.TRACE_FIELD_COLUMNS`` values by ``Trace`` field name, shared by its views; this trace's
    are at ``row`` (``fields``; these five as attributes too)."""
    row: int
    reward = _Field[float]()
    finish_reason = _Field[str]()
    policy = _Field[str]()
    """``sample`` | ``oracle``: whether the trace's trainable tokens were sampled or forced by the oracle."""
    trainable = _Field[bool]()
    filter = _Field[list[str]]()
    """Why the trace is not trainable (``Trace.filter``)."""

    @property
    def top_width(self) -> int:
        """k of ``response_top_ids`` (0: none recorded)."""
        return int(self.response_top_ids.shape[1])

    @property
    def fields(self) -> dict[str, Any]:
        """This trace's column values by ``Trace`` field name (a column added since is here)."""
        return {name: values[self.row] for name, values in self.columns.items()}

    def decode(self) -> TraceBlob:
        if self.blob is None:
            raise ValueError(
                f"trace {self.key!r}/{self.trace_index} was read with blobs=False; no messages to decode"
            )
        return decode_trace_blob(self.blob)


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
                status = TraceStatus(int(t.status[row]))
                for j, ti in enumerate(range(to[row], to[row + 1])):
                    if by_trace and flt is not None and not flt.trace(trainable[ti], policy[ti]):
                        continue
                    a, b, c, d = po[ti], po[ti + 1], ro[ti], ro[ti + 1]
                    yield TraceView(
                        shard=s.path,
                        key=t.keys[row],
                        task_id=t.task_ids[row],
                        sample_index=int(t.sample_index[row]),
                        attempt=int(t.attempt[row]),
                        trace_index=j,
                        status=status,
                        session_reward=float(t.reward[row]),
                        harness=t.harness[row],
                        model=t.model[row],
                        policy_version=int(t.policy_version[row]),
                        prompt_ids=tok.prompt_ids[a:b],
                        response_ids=tok.response_ids[c:d],
                        loss_mask=tok.loss_mask[c:d],
                        response_logprobs=tok.response_logprobs[c:d],
                        response_versions=tok.response_versions[c:d],
                        response_top_ids=tok.response_top_ids[c * k:d * k].reshape(d - c, k),
                        response_top_logprobs=tok.response_top_logprobs[c * k:d * k].reshape(d - c, k),
                        blob=tblobs[ti] if tblobs is not None else None,
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
                    data = _Loaded.read(f)
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


class _Loaded(msgspec.Struct):
    """Everything of one shard beyond its session table, read whole."""

    tr: TraceTable
    tok: Tokens
    tblobs: list[memoryview]
    sblobs: list[memoryview]
    po: list[int]
    ro: list[int]
    legacy: tuple[str, ...]
    """Trace-blob metadata keys that held a column's value in this shard's schema (taken out when rebuilt)."""

    @classmethod
    def read(cls, f: Shard) -> _Loaded:
        tr = read_traces(f)
        return cls(
            tr,
            read_tokens(f),
            blob_items(tr.blob, tr.blob_offsets),
            read_session_blobs(f),
            tr.prompt_offsets.tolist(),
            tr.response_offsets.tolist(),
            legacy_keys(f.version),
        )

    def rebuild(self, t: SessionTable, row: int) -> SessionResult:
        tok, po, ro = self.tok, self.po, self.ro
        traces = []
        for ti in range(int(t.trace_offsets[row]), int(t.trace_offsets[row + 1])):
            a, b, c, d = po[ti], po[ti + 1], ro[ti], ro[ti + 1]
            tb = decode_trace_blob(self.tblobs[ti])
            for key in self.legacy:
                tb.metadata.pop(key, None)
            traces.append(
                rebuild_trace(
                    tb,
                    tok.prompt_ids[a:b].copy(),
                    tok.response_ids[c:d].copy(),
                    tok.loss_mask[c:d].copy(),
                    tok.response_logprobs[c:d].copy(),
                    {name: values[ti] for name, values in self.tr.fields.items()},
                    tok.response_versions[c:d].copy(),
                    (tok.response_top_ids[c * tok.top_width:d * tok.top_width].copy(),
                     tok.response_top_logprobs[c * tok.top_width:d * tok.top_width].copy()),
                )
            )
        return rebuild_session(
            task_id=t.task_ids[row],
            sample_index=int(t.sample_index[row]),
            attempt=int(t.attempt[row]),
            status=int(t.status[row]),
            harness=t.harness[row],
            model=t.model[row],
            policy_version=int(t.policy_version[row]),
            gateway_rank=int(t.gateway_rank[row]),
            blob=decode_session_blob(self.sblobs[row]),
            traces=traces,
        )
