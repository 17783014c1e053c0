"""SessionResult -> shard columns (the writer side; ``rebuild`` is the way back), and the blob codecs."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np
import zstandard

from polar_hpc.errors import PolarError
from polar_hpc.store import schema as S
from polar_hpc.store.schema import (
    BLOB_COMPRESS_MIN,
    BLOB_ZSTD_LEVEL,
    COLUMNS,
    FILTER_SEP,
    SessionBlob,
    TraceBlob,
    offsets_name,
)
from polar_hpc.wire.codec import json_decoder, json_encoder
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.shardmeta import to_shard_metadata, trace_to_shard
from polar_hpc.wire.traces import Trace

_ENC = json_encoder()
_TRACE_DEC = json_decoder(TraceBlob)
_SESSION_DEC = json_decoder(SessionBlob)

_TOKEN_DTYPES: dict[str, np.dtype[Any]] = {
    "prompt_ids": np.dtype("int32"),
    "response_ids": np.dtype("int32"),
    "loss_mask": np.dtype("uint8"),
    "response_logprobs": np.dtype("float32"),
    "response_versions": np.dtype("int32"),
    "response_top_ids": np.dtype("int32"),
    "response_top_logprobs": np.dtype("float32"),
}


class EncodedSession(msgspec.Struct, kw_only=True):
    """One SessionResult ready for the columns: arrays checked, blobs encoded and compressed."""

    result: SessionResult
    prompts: list[np.ndarray]
    responses: list[np.ndarray]
    masks: list[np.ndarray]
    logprobs: list[np.ndarray]
    versions: list[np.ndarray] = msgspec.field(default_factory=list)
    """``Trace.response_versions``, -1 per token where a trace did not record them."""
    top: list[tuple[np.ndarray, np.ndarray]] = msgspec.field(default_factory=list)
    """``Trace.response_top_ids`` / ``response_top_logprobs`` (flat, ``len(response) * k`` with the trace's own k;
    the shard pads them to its widest: ``token_pieces``)."""
    trace_blobs: list[bytes]
    session_blob: bytes
    nbytes: int


def _token_array(value: object, field: str, where: str) -> np.ndarray:
    want = _TOKEN_DTYPES[field]
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{where}.{field}: expected a numpy array of {want}, got {type(value).__name__}")
    if value.ndim != 1:
        raise ValueError(f"{where}.{field}: expected a 1-D array, got shape {value.shape}")
    if value.dtype != want:
        if not np.can_cast(value.dtype, want, "safe"):
            raise TypeError(
                f"{where}.{field}: expected dtype {want}, got {value.dtype} (not safely castable)"
            )
        value = value.astype(want)
    return value


_local = threading.local()


def _codecs() -> tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]:
    try:
        codecs: tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor] = _local.codecs
    except AttributeError:
        codecs = _local.codecs = (zstandard.ZstdCompressor(level=BLOB_ZSTD_LEVEL), zstandard.ZstdDecompressor())
    return codecs


def compress(data: bytes) -> bytes:
    """Small JSON stays as is (compression setup costs more than it saves); see ``schema``."""
    return _codecs()[0].compress(data) if len(data) >= BLOB_COMPRESS_MIN else data


def decompress(blob: bytes | memoryview) -> bytes | memoryview:
    """Raises BlobError for bytes that are neither JSON nor a zstd frame."""
    if blob[:1] == b"{":
        return blob
    try:
        return _codecs()[1].decompress(blob)
    except zstandard.ZstdError as err:
        raise BlobError(f"not a zstd frame nor JSON ({len(blob)} bytes): {err}") from None


class BlobError(PolarError, ValueError):
    """A blob column item that does not decompress."""

    exit_code = 1


def check_trace_tokens(p: np.ndarray, r: np.ndarray, m: np.ndarray, lp: np.ndarray, where: str) -> None:
    """The per-trace fidelity checks of ``store.validate``, on one trace's arrays (dtypes already checked).

    One length for the response columns, non-negative ids, loss mask 0/1, a finite logprob under every mask-1
    token. Raises ValueError naming the first violation. Vectorized: a few passes over the arrays.
    """
    if not (r.shape[0] == m.shape[0] == lp.shape[0]):
        raise ValueError(
            f"{where}: response_ids, loss_mask, response_logprobs must have one length, "
            f"got {r.shape[0]}, {m.shape[0]}, {lp.shape[0]}"
        )
    for name, ids in (("prompt", p), ("response", r)):
        if ids.size and int(ids.min()) < 0:
            raise ValueError(f"{where}: negative {name} token id at token {int(np.argmax(ids < 0))}")
    if m.size and int(m.max()) > 1:
        raise ValueError(f"{where}: loss_mask value not 0/1 at token {int(np.argmax(m > 1))}")
    if np.isfinite(lp).all():  # the common case, in one pass
        return
    unscored = (m == 1) & ~np.isfinite(lp)
    if unscored.any():
        raise ValueError(f"{where}: loss_mask 1 without a finite logprob at token {int(np.argmax(unscored))}")


def check_session(result: SessionResult) -> str | None:
    """Why this result's traces break the token-fidelity invariant (``check_trace_tokens``: one length for
    the response columns, every trained token scored), or None when they hold."""
    for i, tr in enumerate(result.trajectory.traces):
        where = f"trace {i}"
        try:
            check_trace_tokens(
                _token_array(tr.prompt_ids, "prompt_ids", where),
                _token_array(tr.response_ids, "response_ids", where),
                _token_array(tr.loss_mask, "loss_mask", where),
                _token_array(tr.response_logprobs, "response_logprobs", where),
                where,
            )
        except (TypeError, ValueError) as err:
            return str(err)
    return None


def response_versions(tr: Trace, n: int, where: str) -> np.ndarray:
    """``tr.response_versions`` checked against the response length (``n``); -1 per token when not recorded."""
    if tr.response_versions.shape[0] == 0 and n:
        return np.full(n, -1, dtype=np.int32)
    v = _token_array(tr.response_versions, "response_versions", where)
    if v.shape[0] != n:
        raise ValueError(f"{where}: response_versions has {v.shape[0]} items, response_ids {n}")
    return v


def response_top(tr: Trace, n: int, where: str) -> tuple[np.ndarray, np.ndarray]:
    """``tr``'s top-k arrays checked: ``n * k`` items each, for one k."""
    ids = _token_array(tr.response_top_ids, "response_top_ids", where)
    lps = _token_array(tr.response_top_logprobs, "response_top_logprobs", where)
    if ids.shape != lps.shape or (n and ids.shape[0] % n) or (not n and ids.shape[0]):
        raise ValueError(f"{where}: response_top_ids / response_top_logprobs hold {ids.shape[0]} / {lps.shape[0]} "
                         f"items, expected one multiple of the {n} response tokens")
    return ids, lps


def encode_session(result: SessionResult, *, compress_blobs: bool = True) -> EncodedSession:
    """Check one result and encode its blobs. Raises ValueError/TypeError naming session, trace and field.

    ``compress_blobs=False`` leaves the blobs as plain JSON (``nbytes`` counts them uncompressed): the caller
    then runs ``compress_session`` on it, e.g. in a worker thread (zstd releases the GIL), before writing.
    """
    pack = compress if compress_blobs else bytes
    prompts, responses, masks, logprobs, versions, blobs = [], [], [], [], [], []
    tops: list[tuple[np.ndarray, np.ndarray]] = []
    nbytes = 0
    for i, tr in enumerate(result.trajectory.traces):
        where = f"session {result.key!r} trace {i}"
        p = _token_array(tr.prompt_ids, "prompt_ids", where)
        r = _token_array(tr.response_ids, "response_ids", where)
        m = _token_array(tr.loss_mask, "loss_mask", where)
        lp = _token_array(tr.response_logprobs, "response_logprobs", where)
        check_trace_tokens(p, r, m, lp, where)
        v = response_versions(tr, r.shape[0], where)
        top = response_top(tr, r.shape[0], where)
        filter_text(tr.filter, where)
        blob = pack(
            _ENC.encode(
                TraceBlob(
                    prompt_messages=tr.prompt_messages,
                    response_messages=tr.response_messages,
                    tools=tr.tools,
                    metadata=trace_to_shard(tr.meta, tr.extra),
                )
            )
        )
        prompts.append(p)
        responses.append(r)
        masks.append(m)
        logprobs.append(lp)
        versions.append(v)
        tops.append(top)
        blobs.append(blob)
        nbytes += p.nbytes + r.nbytes + m.nbytes + lp.nbytes + v.nbytes + top[0].nbytes + top[1].nbytes + len(blob) + 64
    traj = result.trajectory
    sblob = pack(
        _ENC.encode(
            SessionBlob(
                stats=traj.stats,
                error=traj.error,
                evaluation=result.evaluation,
                timings=result.timings,
                metadata=to_shard_metadata(result),
            )
        )
    )
    return EncodedSession(
        result=result,
        prompts=prompts,
        responses=responses,
        masks=masks,
        logprobs=logprobs,
        versions=versions,
        top=tops,
        trace_blobs=blobs,
        session_blob=sblob,
        nbytes=nbytes + len(sblob) + 256,
    )


def compress_session(enc: EncodedSession) -> int:
    """Compress the blobs of an ``encode_session(..., compress_blobs=False)`` result in place.

    Returns the change of ``enc.nbytes`` (<= 0). Thread-safe for distinct sessions (per-thread compressors).
    """
    before = sum(len(b) for b in enc.trace_blobs) + len(enc.session_blob)
    enc.trace_blobs = [compress(b) for b in enc.trace_blobs]
    enc.session_blob = compress(enc.session_blob)
    delta = sum(len(b) for b in enc.trace_blobs) + len(enc.session_blob) - before
    enc.nbytes += delta
    return delta


def _concat(parts: list[np.ndarray], dtype: str) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def _offsets(lengths: Sequence[int]) -> np.ndarray:
    off = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=off[1:])
    return off


def ragged(items: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Bytes items -> (uint8 data, int64 offsets)."""
    data = np.frombuffer(b"".join(items), dtype=np.uint8)
    return data, _offsets([len(b) for b in items])


def text_items(data: np.ndarray, offsets: np.ndarray) -> list[str]:
    raw = data.tobytes()
    off = offsets.tolist()
    return [raw[a:b].decode() for a, b in zip(off[:-1], off[1:], strict=True)]


def blob_items(data: np.ndarray, offsets: np.ndarray) -> list[memoryview]:
    """Zero-copy slices of a blob column."""
    raw = memoryview(data.data).cast("B")
    off = offsets.tolist()
    return [raw[a:b] for a, b in zip(off[:-1], off[1:], strict=True)]


def raw_pieces(sessions: Sequence[EncodedSession]) -> dict[str, list[np.ndarray]]:
    """The per-trace pieces of the big columns (tokens and trace blobs), in shard order."""
    return token_pieces(sessions) | {
        S.TRACE_BLOB: [np.frombuffer(b, dtype=np.uint8) for s in sessions for b in s.trace_blobs]
    }


def token_pieces(sessions: Sequence[EncodedSession]) -> dict[str, list[np.ndarray]]:
    """The per-trace arrays of each token column, in shard order."""
    return {
        S.PROMPT_IDS: [a for s in sessions for a in s.prompts],
        S.RESPONSE_IDS: [a for s in sessions for a in s.responses],
        S.LOSS_MASK: [a for s in sessions for a in s.masks],
        S.RESPONSE_LOGPROBS: [a for s in sessions for a in s.logprobs],
        S.RESPONSE_VERSIONS: [a for s in sessions for a in s.versions],
    } | top_pieces(sessions)


def shard_top_width(sessions: Sequence[EncodedSession]) -> int:
    """k of a shard's top-k columns: the widest of its traces (0: none recorded them)."""
    return max((t[0].shape[0] // r.shape[0] for s in sessions for t, r in zip(s.top, s.responses, strict=True)
                if r.shape[0]), default=0)


def top_pieces(sessions: Sequence[EncodedSession]) -> dict[str, list[np.ndarray]]:
    """The top-k pieces of every trace, each padded (-1 / NaN) to the shard's width."""
    k = shard_top_width(sessions)
    ids: list[np.ndarray] = []
    lps: list[np.ndarray] = []
    for s in sessions:
        for (ti, tl), r in zip(s.top, s.responses, strict=True):
            n = r.shape[0]
            w = ti.shape[0] // n if n else 0
            if w == k:
                ids.append(ti)
                lps.append(tl)
                continue
            pi = np.full((n, k), -1, dtype=np.int32)
            pl = np.full((n, k), np.nan, dtype=np.float32)
            pi[:, :w], pl[:, :w] = ti.reshape(n, w), tl.reshape(n, w)
            ids.append(pi.reshape(-1))
            lps.append(pl.reshape(-1))
    return {S.RESPONSE_TOP_IDS: ids, S.RESPONSE_TOP_LOGPROBS: lps}


def build_columns(sessions: Sequence[EncodedSession], *, tokens: bool = True) -> dict[str, np.ndarray]:
    """Whole-shard columns keyed by dataset path (text/blob columns give NAME and NAME_offsets).

    ``tokens=False`` leaves out the data of the ``raw_pieces`` columns (the four token columns and
    ``traces/blob``; its offsets stay): the writer writes those from the pieces.
    """
    pieces = token_pieces(sessions)
    prompts, responses = pieces[S.PROMPT_IDS], pieces[S.RESPONSE_IDS]
    cols: dict[str, np.ndarray] = {}
    if tokens:
        for name, parts in pieces.items():
            cols[name] = _concat(parts, COLUMNS[name].dtype)
    cols |= {
        S.PROMPT_OFFSETS: _offsets([a.shape[0] for a in prompts]),
        S.RESPONSE_OFFSETS: _offsets([a.shape[0] for a in responses]),
        S.TRACE_SESSION: np.repeat(
            np.arange(len(sessions), dtype=np.int64), [len(s.prompts) for s in sessions]
        ).astype(np.int64),
    }
    traces = [t for s in sessions for t in s.result.trajectory.traces]
    results = [s.result for s in sessions]
    for c in _FIELD_COLUMNS:
        rows: Sequence[Any] = traces if c.length == "traces" else results
        values = list(map(attrgetter(c.field), rows))  # type: ignore[arg-type]  # _FIELD_COLUMNS have one
        if c.encode is not None:
            values = list(map(c.encode, values))
        if c.kind == "text":
            _put(cols, c.path, [v.encode() for v in values])
        else:
            cols[c.path] = np.array(values, dtype=c.dtype)
    tblobs = [b for s in sessions for b in s.trace_blobs]
    if tokens:
        _put(cols, S.TRACE_BLOB, tblobs)
    else:
        cols[offsets_name(S.TRACE_BLOB)] = _offsets([len(b) for b in tblobs])
    cols[S.TRACE_OFFSETS] = _offsets([len(s.prompts) for s in sessions])
    _put(cols, S.SESSION_BLOB, [s.session_blob for s in sessions])
    return cols


_FIELD_COLUMNS = tuple(c for c in S.ALL_COLUMNS if c.field is not None and c.length in ("traces", "sessions"))
"""The columns written from a ``Trace`` / ``SessionResult`` attribute (the schema's table), in its order."""


def _put(cols: dict[str, np.ndarray], path: str, items: list[bytes]) -> None:
    cols[path], cols[offsets_name(path)] = ragged(items)


def filter_text(reasons: Sequence[str], where: str = "trace") -> str:
    """One ``traces/filter`` item; ValueError for a reason that is empty or holds the separator."""
    for r in reasons:
        if not r or FILTER_SEP in r:
            raise ValueError(f"{where}.filter: expected reasons without {FILTER_SEP!r}, got {r!r}")
    return S.join_reasons(list(reasons))


def decode_trace_blob(blob: bytes | memoryview) -> TraceBlob:
    return _TRACE_DEC.decode(decompress(blob))


def decode_session_blob(blob: bytes | memoryview) -> SessionBlob:
    return _SESSION_DEC.decode(decompress(blob))
