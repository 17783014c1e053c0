"""Opening one committed shard and reading its tables whole (the reader, resume index and tools share this)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import h5py
import msgspec
import numpy as np

from polar_hpc.errors import PolarError
from polar_hpc.store import schema as S
from polar_hpc.store.encode import blob_items, decode_trace_blob, text_items
from polar_hpc.store.schema import (
    COLUMNS,
    GROUPS,
    SHARD_SUFFIX,
    TMP_SUFFIX,
    TRACE_FIELD_COLUMNS,
    check_attributes,
    check_offsets,
    check_structure,
    offsets_name,
    schema_version,
)
from polar_hpc.wire.rundir import shards_of
from polar_hpc.wire.traces import Trace

_TRACE_FIELDS = {f.name: f for f in msgspec.structs.fields(Trace)}


class ShardError(PolarError):
    """A shard that cannot be used: torn, truncated, not a shard, wrong schema. The message names the file."""

    exit_code = 1


class TraceTable(msgspec.Struct, kw_only=True):
    prompt_offsets: np.ndarray
    response_offsets: np.ndarray
    session: np.ndarray
    blob: np.ndarray
    blob_offsets: np.ndarray
    fields: dict[str, list[Any]]
    """Each of ``TRACE_FIELD_COLUMNS`` as its ``Trace`` field's values, one a trace, by field name
    (``read_fields``)."""


class Tokens(msgspec.Struct, kw_only=True):
    prompt_ids: np.ndarray
    response_ids: np.ndarray
    loss_mask: np.ndarray
    response_logprobs: np.ndarray
    response_versions: np.ndarray
    """-1 per token in a shard older than the column (``schema.MISSING_TOKEN``)."""
    response_top_ids: np.ndarray
    """Flat, ``top_width`` per response token (empty when the shard has none)."""
    response_top_logprobs: np.ndarray
    top_width: int = 0


def resolve_shards(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> tuple[list[Path], list[str]]:
    """Committed shard files under ``paths`` (files, shard dirs, or run dirs holding ``shards/``), in read order.

    Order: arguments in the order given; inside a directory, by file name (rank, then seq), which is
    deterministic and follows commit order within a rank. Returns (files, problems).
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    files: list[Path] = []
    problems: list[str] = []
    seen: set[Path] = set()
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(shards_of(p).glob(f"*{SHARD_SUFFIX}"), key=lambda x: x.name)
        elif p.is_file():
            if p.name.endswith(TMP_SUFFIX) or not p.name.endswith(SHARD_SUFFIX):
                problems.append(f"{p}: not a committed shard (expected a *{SHARD_SUFFIX} file)")
                continue
            found = [p]
        else:
            problems.append(f"{p}: no such file or directory")
            continue
        for f in found:
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                files.append(f)
    return files, problems


class Shard:
    """An open shard: cached low-level dataset handles and whole-dataset reads.

    h5py's high-level objects cost tens of microseconds per lookup; a shard has ~35 datasets and a run
    may have thousands of shards, so the reader goes through ``h5py.h5d`` directly.
    """

    def __init__(self, f: h5py.File, path: Path) -> None:
        self.file = f
        self.path = path
        self._ids: dict[str, Any] = {}

    @property
    def attrs(self) -> Any:
        return self.file.attrs

    def names(self) -> set[str]:
        out: set[str] = set()
        for group in GROUPS:
            g = self.file.get(group)
            if isinstance(g, h5py.Group):
                out.update(f"{group}/{k}" for k in g)
        return out

    def dsid(self, name: str) -> Any:
        d = self._ids.get(name)
        if d is None:
            d = self._ids[name] = h5py.h5d.open(self.file.id, name.encode())
        return d

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.dsid(name).shape)

    def dtype(self, name: str) -> np.dtype[Any]:
        dtype: np.dtype[Any] = np.dtype(self.dsid(name).dtype)
        return dtype

    def read(self, name: str) -> np.ndarray:
        d = self.dsid(name)
        out = np.empty(d.shape, dtype=d.dtype)
        if out.size:
            d.read(h5py.h5s.ALL, h5py.h5s.ALL, out)
        return out

    def text(self, name: str) -> list[str]:
        return text_items(self.read(name), self.read(offsets_name(name)))

    @property
    def version(self) -> int:
        """The shard's ``schema_version`` (checked by ``open_shard`` unless ``check=False``)."""
        return int(schema_version(self.file))


def _open(path: Path) -> h5py.File:
    try:
        return h5py.File(path, "r", locking=False)
    except (OSError, ValueError) as err:
        raise ShardError(f"{path}: cannot open as HDF5 (torn or truncated?): {err}") from None


@contextmanager
def open_shard(path: Path, *, check: bool = True) -> Iterator[Shard]:
    """Open a shard read-only and check its structure; raises ShardError naming the file and the fault.

    ``check=False`` skips the structure check (for a shard already checked: committed shards never change).
    """
    f = _open(path)
    try:
        shard = Shard(f, path)
        try:
            problems = check_structure(shard) if check else []
        except (OSError, KeyError, ValueError, TypeError) as err:
            raise ShardError(f"{path}: unreadable structure: {err}") from None
        if problems:
            raise ShardError(f"{path}: " + "; ".join(problems))
        yield shard
    finally:
        f.close()


def read_keys(path: Path, outcomes: list[tuple[int, float]] | None = None) -> list[str]:
    """Session keys of one shard with the checks resume needs (schema, key column sound), nothing more; with
    ``outcomes``, each session's (status, reward) is appended to it, in key order.

    Raises ShardError naming the file.
    """
    f = _open(path)
    try:
        shard = Shard(f, path)
        problems = check_attributes(shard)
        if not problems:
            name = offsets_name(S.SESSION_KEY)
            data, off = shard.read(S.SESSION_KEY), shard.read(name)
            problems = check_offsets(name, off, data.shape[0])
            if not problems and off.shape[0] != int(f.attrs[S.ATTR_SESSIONS]) + 1:
                problems = [
                    f"{S.SESSION_KEY} holds {off.shape[0] - 1} keys, "
                    f"attribute {S.ATTR_SESSIONS} says {f.attrs[S.ATTR_SESSIONS]}"
                ]
        if problems:
            raise ShardError(f"{path}: " + "; ".join(problems))
        keys = text_items(data, off)
        if outcomes is not None:
            status, reward = shard.read(S.STATUS), shard.read(S.SESSION_REWARD)
            if status.shape[0] != len(keys) or reward.shape[0] != len(keys):
                raise ShardError(f"{path}: {S.STATUS} / {S.SESSION_REWARD} hold {status.shape[0]} / "
                                 f"{reward.shape[0]} rows for {len(keys)} sessions")
            outcomes.extend(zip(status.tolist(), reward.tolist(), strict=True))
        return keys
    except (OSError, KeyError, ValueError, TypeError) as err:
        raise ShardError(f"{path}: unreadable session keys: {err}") from None
    finally:
        f.close()


def read_traces(f: Shard, *, blobs: bool = True, fields: bool = True) -> TraceTable:
    """``blobs=False`` leaves the blob column (messages, tools, metadata) unread and empty; ``fields=False``
    leaves ``fields`` empty (``store.validate`` reads the items itself)."""
    blob = f.read(S.TRACE_BLOB) if blobs else np.zeros(0, dtype=np.uint8)  # read_trace_blobs slices these
    blob_offsets = f.read(offsets_name(S.TRACE_BLOB)) if blobs else np.zeros(1, dtype=np.int64)
    return TraceTable(
        prompt_offsets=f.read(S.PROMPT_OFFSETS),
        response_offsets=f.read(S.RESPONSE_OFFSETS),
        session=f.read(S.TRACE_SESSION),
        blob=blob,
        blob_offsets=blob_offsets,
        fields=read_fields(f, blobs=(blob, blob_offsets) if blobs else None) if fields else {},
    )


def read_items(f: Shard, c: S.Column) -> list[Any]:
    """The stored items of column ``c`` as Python values (str for text), not decoded."""
    return f.text(c.path) if c.kind == "text" else f.read(c.path).tolist()


def read_fields(f: Shard, columns: tuple[S.Column, ...] = TRACE_FIELD_COLUMNS,
                blobs: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, list[Any]]:
    """Trace columns as their ``Trace`` field's values, by field name; ValueError for an item that does not decode.

    A column the shard is older than: its ``legacy_key`` of each trace blob's metadata (the blobs are decoded
    from ``blobs``, the blob column and its offsets, read when None), else the field's default.
    """
    out: dict[str, list[Any]] = {}
    metas: list[dict[str, Any]] | None = None
    for c in columns:
        name = str(c.field)
        if f.version >= c.since:
            items = read_items(f, c)
            out[name] = list(map(c.decode, items)) if c.decode is not None else items
            continue
        if c.legacy_key is None:
            out[name] = [_default(name) for _ in range(f.shape(S.TRACE_SESSION)[0])]
            continue
        if metas is None:
            data, off = blobs if blobs is not None else (f.read(S.TRACE_BLOB), f.read(offsets_name(S.TRACE_BLOB)))
            metas = [decode_trace_blob(b).metadata for b in blob_items(data, off)]
        out[name] = [_legacy(c, m) for m in metas]
    return out


def _default(name: str) -> Any:
    info = _TRACE_FIELDS[name]
    return info.default_factory() if info.default_factory is not msgspec.NODEFAULT else info.default


def _legacy(c: S.Column, meta: dict[str, Any]) -> Any:
    if c.legacy_key not in meta or meta[c.legacy_key] is None:
        return _default(str(c.field))
    item = meta[c.legacy_key]
    item = c.encode(item) if c.encode is not None else item
    return c.decode(item) if c.decode is not None else item


def read_policies(f: Shard) -> list[str]:
    """``traces/policy``; a version-1 shard has no such column and only sampled traces."""
    return read_fields(f, (COLUMNS[S.POLICY],))["policy"]


def read_trainable(f: Shard) -> np.ndarray:
    """``traces/trainable`` as bool; decodes every trace blob of a shard older than schema 3."""
    return np.array(read_fields(f, (COLUMNS[S.TRAINABLE],))["trainable"], dtype=bool)


def read_offsets(f: Shard) -> tuple[np.ndarray, np.ndarray]:
    """(``traces/prompt_offsets``, ``traces/response_offsets``): trace t's tokens are ``[off[t], off[t+1])``."""
    return f.read(S.PROMPT_OFFSETS), f.read(S.RESPONSE_OFFSETS)


def read_trace_rewards(f: Shard) -> np.ndarray:
    return f.read(S.TRACE_REWARD)


def read_finish_reasons(f: Shard) -> list[str]:
    return f.text(S.FINISH_REASON)


def read_trace_blobs(f: Shard) -> list[memoryview]:
    """Each trace's blob (``encode.decode_trace_blob`` reads one), zero-copy."""
    return blob_items(f.read(S.TRACE_BLOB), f.read(offsets_name(S.TRACE_BLOB)))


def read_session_blobs(f: Shard) -> list[memoryview]:
    """Each session's blob (``encode.decode_session_blob`` reads one), zero-copy."""
    return blob_items(f.read(S.SESSION_BLOB), f.read(offsets_name(S.SESSION_BLOB)))


def read_tokens(f: Shard) -> Tokens:
    return Tokens(
        prompt_ids=f.read(S.PROMPT_IDS),
        response_ids=f.read(S.RESPONSE_IDS),
        loss_mask=f.read(S.LOSS_MASK),
        response_logprobs=f.read(S.RESPONSE_LOGPROBS),
        response_versions=read_token_column(f, S.RESPONSE_VERSIONS),
        response_top_ids=read_token_column(f, S.RESPONSE_TOP_IDS),
        response_top_logprobs=read_token_column(f, S.RESPONSE_TOP_LOGPROBS),
        top_width=S.top_width(f) if f.version >= COLUMNS[S.RESPONSE_TOP_IDS].since else 0,
    )


def read_token_column(f: Shard, path: str) -> np.ndarray:
    """A token column, or what it reads as per token (``schema.MISSING_TOKEN``) where the shard predates it."""
    c = COLUMNS[path]
    if f.version >= c.since:
        return f.read(path)
    n = 0 if c.length == "response_top" else f.shape(S.RESPONSE_IDS if c.length == "response" else S.PROMPT_IDS)[0]
    return np.full(n, S.MISSING_TOKEN[path], dtype=c.dtype)
