"""``shards export``: raw trace fields, token level, as JSONL or Parquet (one row per trace)."""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from polar_hpc.store.reader import ShardReader
from polar_hpc.store.schema import SESSION_FIELD_COLUMNS, TOKEN_COLUMNS, TRACE_FIELD_COLUMNS, Column, TraceBlob
from polar_hpc.store.select import TraceSelect
from polar_hpc.store.traceview import TraceView
from polar_hpc.wire.traces import Trace


def _session_type(c: Column) -> type:
    if c.kind == "text" or (isinstance(c.decode, type) and issubclass(c.decode, Enum)):
        return str
    return int if np.dtype(c.dtype).kind in "iu" else float


_IDENTITY = 4
"""The session columns before ``trace_index`` (key, task_id, sample_index, attempt: the trace's identity)."""
_SESSION_FIELDS: list[tuple[str, type]] = [(c.name, _session_type(c)) for c in SESSION_FIELD_COLUMNS]
_SESSION_FIELDS.insert(_IDENTITY, ("trace_index", int))
_TRACE_TYPES = {f.name: f.type for f in msgspec.structs.fields(Trace)}
_SCALARS = [name for name, _ in _SESSION_FIELDS] + [str(c.field) for c in TRACE_FIELD_COLUMNS]
_TOKENS = {str(c.field): c.dtype for c in TOKEN_COLUMNS}
_JSON_FIELDS = [f.name for f in msgspec.structs.fields(TraceBlob)]
ExportRow = msgspec.defstruct(
    "ExportRow",
    [*_SESSION_FIELDS, *((name, _TRACE_TYPES[name]) for name in _SCALARS[len(_SESSION_FIELDS):]),
     *((name, np.ndarray) for name in _TOKENS), *((name, msgspec.Raw) for name in _JSON_FIELDS)],
    kw_only=True,
    module=__name__,
)
"""One trace: its session's columns (``SESSION_COLUMNS``, ``trace_index`` after the identity), then every ``Trace``
field, in the schema's order (the trace columns, the token columns, the trace blob's fields as JSON). Non-finite
logprobs are written as null in JSONL."""


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


_ENC = msgspec.json.Encoder(enc_hook=_enc_hook)


def rows(reader: ShardReader, flt: TraceSelect | None) -> Iterator[msgspec.Struct]:
    """``ExportRow`` per selected trace."""
    for t in reader.traces(flt):
        yield _row(t)


def _row(t: TraceView) -> msgspec.Struct:
    b = t.decode()
    row: msgspec.Struct = ExportRow(
        **{name: v.name if isinstance(v, Enum) else v for name, v in t.session.items()},
        trace_index=t.trace_index,
        **t.fields,
        **{name: getattr(t, name) for name in _TOKENS},
        **{name: msgspec.Raw(_ENC.encode(getattr(b, name))) for name in _JSON_FIELDS},
    )
    return row


def export_jsonl(reader: ShardReader, flt: TraceSelect | None, out: Path) -> int:
    n = 0
    with open(out, "wb") as f:
        for r in rows(reader, flt):
            f.write(_ENC.encode(r))
            f.write(b"\n")
            n += 1
    return n


def _import_pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(
            "Parquet export needs pyarrow: pip install 'polar-hpc[train]' (or pip install pyarrow)"
        ) from None
    return pa, pq


def _list_column(pa: Any, parts: list[np.ndarray], dtype: str) -> Any:
    """One list a row; a per-token (n, k) array (top-k) as its n * k items, row-major."""
    parts = [p.reshape(-1) for p in parts]
    off = np.zeros(len(parts) + 1, dtype=np.int32)
    np.cumsum([p.shape[0] for p in parts], out=off[1:])
    values = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    return pa.ListArray.from_arrays(pa.array(off), pa.array(values))


def _batch(pa: Any, batch: list[msgspec.Struct]) -> Any:
    cols: dict[str, Any] = {name: pa.array([getattr(r, name) for r in batch]) for name in _SCALARS}
    for name, dtype in _TOKENS.items():
        cols[name] = _list_column(pa, [getattr(r, name) for r in batch], dtype)
    for name in _JSON_FIELDS:
        cols[name] = pa.array([bytes(getattr(r, name)).decode() for r in batch], type=pa.string())
    return pa.table(cols)


def export_parquet(reader: ShardReader, flt: TraceSelect | None, out: Path, batch_rows: int = 512) -> int:
    """Lists of int32/uint8/float32 for the token fields (NaN kept), JSON text for messages, tools, metadata."""
    pa, pq = _import_pyarrow()
    writer = None
    n = 0
    batch: list[msgspec.Struct] = []
    try:
        for r in rows(reader, flt):
            batch.append(r)
            if len(batch) >= batch_rows:
                table = _batch(pa, batch)
                writer = writer or pq.ParquetWriter(str(out), table.schema)
                writer.write_table(table)
                n += len(batch)
                batch = []
        if batch or writer is None:
            table = _batch(pa, batch)
            writer = writer or pq.ParquetWriter(str(out), table.schema)
            writer.write_table(table)
            n += len(batch)
    finally:
        if writer is not None:
            writer.close()
    return n
