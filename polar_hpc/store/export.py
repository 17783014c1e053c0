"""``shards export``: raw trace fields, token level, as JSONL or Parquet (one row per trace)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from polar_hpc.store.reader import ShardReader, TraceView
from polar_hpc.store.select import TraceSelect


class ExportRow(msgspec.Struct, kw_only=True):
    key: str
    task_id: str
    sample_index: int
    attempt: int
    trace_index: int
    status: str
    session_reward: float
    reward: float
    finish_reason: str
    policy: str
    """``sample`` | ``oracle``: what produced the trace's tokens (``Trace.policy``)."""
    harness: str
    model: str
    policy_version: int
    trainable: bool
    filter: list[str]
    """Why the trace is not trainable (``Trace.filter``; before schema 3 these two were metadata keys)."""
    prompt_ids: np.ndarray
    response_ids: np.ndarray
    loss_mask: np.ndarray
    response_logprobs: np.ndarray
    """Non-finite values are written as null in JSONL."""
    prompt_messages: msgspec.Raw
    response_messages: msgspec.Raw
    tools: msgspec.Raw
    metadata: msgspec.Raw


_SCALARS = (
    "key task_id sample_index attempt trace_index status session_reward reward finish_reason policy harness model "
    "policy_version trainable filter"
).split()
_JSON_FIELDS = ("prompt_messages", "response_messages", "tools", "metadata")


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


_ENC = msgspec.json.Encoder(enc_hook=_enc_hook)


def rows(reader: ShardReader, flt: TraceSelect | None) -> Iterator[ExportRow]:
    for t in reader.traces(flt):
        yield _row(t)


def _row(t: TraceView) -> ExportRow:
    b = t.decode()
    return ExportRow(
        key=t.key,
        task_id=t.task_id,
        sample_index=t.sample_index,
        attempt=t.attempt,
        trace_index=t.trace_index,
        status=t.status.name,
        session_reward=t.session_reward,
        reward=t.reward,
        finish_reason=t.finish_reason,
        policy=t.policy,
        harness=t.harness,
        model=t.model,
        policy_version=t.policy_version,
        trainable=t.trainable,
        filter=t.filter,
        prompt_ids=t.prompt_ids,
        response_ids=t.response_ids,
        loss_mask=t.loss_mask,
        response_logprobs=t.response_logprobs,
        prompt_messages=msgspec.Raw(_ENC.encode(b.prompt_messages)),
        response_messages=msgspec.Raw(_ENC.encode(b.response_messages)),
        tools=msgspec.Raw(_ENC.encode(b.tools)),
        metadata=msgspec.Raw(_ENC.encode(b.metadata)),
    )


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
    off = np.zeros(len(parts) + 1, dtype=np.int32)
    np.cumsum([p.shape[0] for p in parts], out=off[1:])
    values = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    return pa.ListArray.from_arrays(pa.array(off), pa.array(values))


def _batch(pa: Any, batch: list[ExportRow]) -> Any:
    cols: dict[str, Any] = {name: pa.array([getattr(r, name) for r in batch]) for name in _SCALARS}
    cols["prompt_ids"] = _list_column(pa, [r.prompt_ids for r in batch], "int32")
    cols["response_ids"] = _list_column(pa, [r.response_ids for r in batch], "int32")
    cols["loss_mask"] = _list_column(pa, [r.loss_mask for r in batch], "uint8")
    cols["response_logprobs"] = _list_column(pa, [r.response_logprobs for r in batch], "float32")
    for name in _JSON_FIELDS:
        cols[name] = pa.array([bytes(getattr(r, name)).decode() for r in batch], type=pa.string())
    return pa.table(cols)


def export_parquet(reader: ShardReader, flt: TraceSelect | None, out: Path, batch_rows: int = 512) -> int:
    """Lists of int32/uint8/float32 for the token fields (NaN kept), JSON text for messages, tools, metadata."""
    pa, pq = _import_pyarrow()
    writer = None
    n = 0
    batch: list[ExportRow] = []
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
