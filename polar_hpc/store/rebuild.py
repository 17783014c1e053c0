"""Shard columns -> ``Trace`` / ``SessionResult`` (the reader side of ``encode``)."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from polar_hpc.store.encode import blob_items, decode_session_blob, decode_trace_blob
from polar_hpc.store.schema import SESSION_FIELD_COLUMNS, SessionBlob, TraceBlob, legacy_keys
from polar_hpc.store.sessions import SessionTable
from polar_hpc.store.shardfile import Shard, Tokens, TraceTable, read_session_blobs, read_tokens, read_traces
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.shardmeta import from_shard_metadata, trace_from_shard
from polar_hpc.wire.traces import Trace, Trajectory

_RESULT_FIELDS = {f.name for f in msgspec.structs.fields(SessionResult)}
_STORED = tuple((c.name, str(c.field)) for c in SESSION_FIELD_COLUMNS if c.field in _RESULT_FIELDS)
"""(column name, ``SessionResult`` field) of the session columns that hold a field as it is (not derived:
``key``, ``reward`` and ``duration_s`` follow from the others, ``status`` is the trajectory's)."""


def rebuild_trace(
    tb: TraceBlob,
    prompt: np.ndarray,
    response: np.ndarray,
    mask: np.ndarray,
    logprobs: np.ndarray,
    fields: dict[str, Any],
    versions: np.ndarray | None = None,
    top: tuple[np.ndarray, np.ndarray] | None = None,
) -> Trace:
    """``fields``: the trace's ``schema.TRACE_FIELD_COLUMNS`` values by field name (``shardfile.read_fields``);
    ``versions`` / ``top`` without a known value (-1 everywhere) is what a trace without them wrote: left empty."""
    meta, extra = trace_from_shard(tb.metadata)
    tr = Trace(
        prompt_ids=prompt,
        response_ids=response,
        loss_mask=mask,
        response_logprobs=logprobs,
        prompt_messages=tb.prompt_messages,
        response_messages=tb.response_messages,
        tools=tb.tools,
        meta=meta,
        extra=extra,
        **fields,
    )
    if versions is not None and bool((versions >= 0).any()):
        tr.response_versions = versions
    if top is not None and bool((top[0] >= 0).any()):
        tr.response_top_ids, tr.response_top_logprobs = top
    return tr


def rebuild_session(columns: dict[str, Any], blob: SessionBlob, traces: list[Trace]) -> SessionResult:
    """``columns``: one row of the session table (``SessionTable.row``)."""
    return from_shard_metadata(SessionResult(
        trajectory=Trajectory(status=columns["status"], traces=traces, stats=blob.stats, error=blob.error),
        evaluation=blob.evaluation,
        timings=blob.timings,
        metadata=blob.metadata,
        **{field: columns[name] for name, field in _STORED},
    ))


class Loaded(msgspec.Struct):
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
    def read(cls, f: Shard) -> Loaded:
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
        tok, po, ro, k = self.tok, self.po, self.ro, self.tok.top_width
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
                    (tok.response_top_ids[c * k:d * k].copy(), tok.response_top_logprobs[c * k:d * k].copy()),
                )
            )
        return rebuild_session(t.row(row), decode_session_blob(self.sblobs[row]), traces)
