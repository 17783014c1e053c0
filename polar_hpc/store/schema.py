"""HDF5 shard layout: the single source of truth for names, dtypes and lengths.

One shard holds S sessions with T traces in total, columnar::

    /tokens/prompt_ids          int32   [P]     all prompts, concatenated
    /tokens/response_ids        int32   [R]     all responses, concatenated
    /tokens/loss_mask           uint8   [R]     aligned with response_ids
    /tokens/response_logprobs   float32 [R]     aligned with response_ids
    /tokens/response_versions   int32   [R]     the weight version that sampled each token, -1: none (v4)
    /tokens/response_top_ids    int32   [R*k]   the sampler's k most likely ids per response token, row-major (v4)
    /tokens/response_top_logprobs float32 [R*k] their logprobs; -1 / NaN where none (v4)
    /traces/prompt_offsets      int64   [T+1]   trace t: prompt_ids[off[t]:off[t+1]]
    /traces/response_offsets    int64   [T+1]   same for the three response-aligned columns
    /traces/session             int64   [T]     row in /sessions
    /traces/reward              float64 [T]
    /traces/finish_reason       text    [T]
    /traces/policy              text    [T]     ``sample`` | ``oracle`` (what produced the trace's tokens; v2)
    /traces/trainable           uint8   [T]     1 | 0: 0 = a trainer should leave the trace out (v3)
    /traces/filter              text    [T]     why not trainable: reasons joined by ``,``, empty when none (v3)
    /traces/blob                blob    [T]     zstd(JSON(TraceBlob)): messages, tools, metadata
    /sessions/key ... /sessions/blob            one row per session (SESSION_COLUMNS)
    /sessions/trace_offsets     int64   [S+1]   session s: traces trace_offsets[s]:trace_offsets[s+1]

A *text* or *blob* column NAME is stored as two datasets: ``NAME`` (uint8, the concatenated bytes) and
``NAME_offsets`` (int64 [n+1]). Text items are UTF-8. A blob item is msgspec JSON of a Struct below: as is
when it starts with ``{`` (items under BLOB_COMPRESS_MIN bytes), else one zstd frame (level 1: fast;
it starts with the zstd magic 28 b5 2f fd). Bytes survive exactly (NUL included),
and a whole column reads in two calls. JSON blobs carry non-finite floats as ``null``; rewards live in
float64 columns and token logprobs in float32 columns, so those keep NaN/inf bit for bit.

File attributes: ``schema`` (SCHEMA_NAME), ``schema_version``, ``producer`` (JSON object of strings),
``rank``, ``seq``, ``created_unix``, ``sessions``, ``traces``, ``top_logprobs`` (k of the top-k columns, 0 when none
of the shard's traces recorded them; v4).

Versions: 2 added ``traces/policy``; 3 added ``traces/trainable`` and ``traces/filter``, which older shards keep
as the keys ``trainable`` and ``filter`` of each trace blob's metadata; 4 added ``tokens/response_versions``
(older shards read -1, unknown, for every token: their traces keep only each chain's versions, in the blob's
``weight_versions``) and the top-k columns (older shards: k = 0, empty). Versions 1 and 2 are still read: a column
a shard is older than reads as its ``legacy_key`` of each trace blob's metadata (the key leaves the metadata), or
else as the ``Trace`` field's default (every trace of a version-1 shard is ``sample``). Readers get the same
``Trace`` from any version.

A session column is one row of SESSION_COLUMNS, read the same way (``sessions.read_sessions``).
A trace column is one row of TRACE_COLUMNS: the writer (``encode.build_columns``), the shard reading
(``shardfile.read_fields``), the reader (``TraceView.fields``, ``ShardReader.results``), validation
(``validate.validate_shard`` decodes every item) and ``shards export`` (``export.ExportRow``) iterate the table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, get_args

import msgspec
import numpy as np

from polar_hpc.config.run import TokenPolicy
from polar_hpc.wire.calls import ChatMessage, ToolSpec
from polar_hpc.wire.traces import EvalResult, ReconstructionStats, TraceStatus

SCHEMA_NAME = "polar-hpc-shard"
SCHEMA_VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)
ATTR_SCHEMA = "schema"
ATTR_SCHEMA_VERSION = "schema_version"
ATTR_PRODUCER = "producer"
"""JSON of what wrote the shard (its run, rank, version)."""
ATTR_RANK = "rank"
ATTR_SEQ = "seq"
ATTR_CREATED = "created_unix"
ATTR_SESSIONS = "sessions"
ATTR_TRACES = "traces"
ATTR_TOP_LOGPROBS = "top_logprobs"
"""The shard's file attributes (``h5py.File.attrs``)."""
SHARD_SUFFIX = ".h5"
TMP_SUFFIX = ".h5.tmp"
BLOB_ZSTD_LEVEL = 1
BLOB_COMPRESS_MIN = 512
FILTER_SEP = ","
"""Separates the reasons of one ``traces/filter`` item."""
TOKEN_POLICIES: tuple[str, ...] = get_args(TokenPolicy)

Kind = Literal["array", "text", "blob"]
Length = Literal["prompt", "response", "response_top", "traces", "traces+1", "sessions", "sessions+1"]
"""``response_top``: ``response`` x the shard's ``top_logprobs`` attribute (k)."""


class Column(msgspec.Struct, frozen=True):
    path: str
    kind: Kind
    dtype: str
    """numpy dtype of an array column (``uint8`` for text/blob data)."""
    length: Length
    """Number of rows (text/blob: number of items; the data has its own length)."""
    since: int = 1
    """The schema version that added the column (older shards lack it)."""
    field: str | None = None
    """What it holds: the attribute (dotted when nested) of a ``Trace`` (``tokens/*``, ``traces/*``) or a
    ``SessionResult`` (``sessions/*``); None for the shard's own structure (offsets, row links, blobs)."""
    encode: Callable[[Any], Any] | None = None
    """The attribute's value → the stored item (a number, or a str for text), where it is not stored as it is.
    The writer (``encode.build_columns``) writes every ``traces`` / ``sessions`` column with a field from these
    two; the token columns come from the builders' arrays as they are."""
    decode: Callable[[Any], Any] | None = None
    """The stored item (a Python number, or a str for text) → the attribute's value, where it is not the item
    itself; raises ValueError (a message without the column's path) for an item no writer makes."""
    legacy_key: str | None = None
    """For a shard older than ``since``: the trace-blob metadata key that held the value (encoded and decoded
    as an item); without one, or where a blob lacks it, the ``Trace`` field's default."""
    view: str | None = None
    """A session column's name in ``SessionTable``, ``TraceView`` and ``shards export`` where it is not the
    path's last part."""

    @property
    def name(self) -> str:
        return self.view or self.path.rsplit("/", 1)[-1]


def _a(path: str, dtype: str, length: Length, field: str | None = None,
       encode: Callable[[Any], Any] | None = None) -> Column:
    return Column(path, "array", dtype, length, field=field, encode=encode)


def _text(path: str, length: Length, field: str, since: int = 1,
          encode: Callable[[Any], Any] | None = None, decode: Callable[[Any], Any] | None = None,
          legacy_key: str | None = None) -> Column:
    return Column(path, "text", "uint8", length, since=since, field=field, encode=encode, decode=decode,
                  legacy_key=legacy_key)


def join_reasons(reasons: list[str]) -> str:
    """One ``traces/filter`` item (``encode.filter_text`` checks the reasons first)."""
    return FILTER_SEP.join(reasons)


def split_reasons(text: str) -> list[str]:
    """A ``traces/filter`` item back as its reasons; ValueError for an empty reason."""
    reasons = text.split(FILTER_SEP) if text else []
    if "" in reasons:
        raise ValueError(f"{text!r}: expected reasons joined by {FILTER_SEP!r}")
    return reasons


def flag(item: int) -> bool:
    """A 0/1 item as bool; ValueError for anything else."""
    if item not in (0, 1):
        raise ValueError(f"is {item}, expected 0 or 1")
    return bool(item)


def token_policy(text: str) -> TokenPolicy:
    """A ``traces/policy`` item; ValueError naming the valid ones otherwise."""
    if text not in TOKEN_POLICIES:
        raise ValueError(f"{text!r} is not one of {', '.join(TOKEN_POLICIES)}")
    return text  # type: ignore[return-value]  # one of TOKEN_POLICIES, checked above


GROUPS = ("tokens", "traces", "sessions")

PROMPT_IDS = "tokens/prompt_ids"
RESPONSE_IDS = "tokens/response_ids"
LOSS_MASK = "tokens/loss_mask"
RESPONSE_LOGPROBS = "tokens/response_logprobs"
RESPONSE_VERSIONS = "tokens/response_versions"
RESPONSE_TOP_IDS = "tokens/response_top_ids"
RESPONSE_TOP_LOGPROBS = "tokens/response_top_logprobs"
PROMPT_OFFSETS = "traces/prompt_offsets"
RESPONSE_OFFSETS = "traces/response_offsets"
TRACE_SESSION = "traces/session"
TRACE_REWARD = "traces/reward"
FINISH_REASON = "traces/finish_reason"
POLICY = "traces/policy"
TRAINABLE = "traces/trainable"
FILTER = "traces/filter"
TRACE_BLOB = "traces/blob"
SESSION_KEY = "sessions/key"
TASK_ID = "sessions/task_id"
SAMPLE_INDEX = "sessions/sample_index"
ATTEMPT = "sessions/attempt"
STATUS = "sessions/status"
SESSION_REWARD = "sessions/reward"
DURATION_S = "sessions/duration_s"
HARNESS = "sessions/harness"
MODEL = "sessions/model"
POLICY_VERSION = "sessions/policy_version"
GATEWAY_RANK = "sessions/gateway_rank"
TRACE_OFFSETS = "sessions/trace_offsets"
SESSION_BLOB = "sessions/blob"

TOKEN_COLUMNS = (
    _a(PROMPT_IDS, "int32", "prompt", "prompt_ids"),
    _a(RESPONSE_IDS, "int32", "response", "response_ids"),
    _a(LOSS_MASK, "uint8", "response", "loss_mask"),
    _a(RESPONSE_LOGPROBS, "float32", "response", "response_logprobs"),
    Column(RESPONSE_VERSIONS, "array", "int32", "response", since=4, field="response_versions"),
    Column(RESPONSE_TOP_IDS, "array", "int32", "response_top", since=4, field="response_top_ids"),
    Column(RESPONSE_TOP_LOGPROBS, "array", "float32", "response_top", since=4, field="response_top_logprobs"),
)
"""A token column added later (``since`` > 1) reads as ``MISSING_TOKEN`` per token in older shards."""
MISSING_TOKEN: dict[str, float] = {RESPONSE_VERSIONS: -1, RESPONSE_TOP_IDS: -1, RESPONSE_TOP_LOGPROBS: float("nan")}
"""What a token column reads as, per token, in a shard older than the column (``shardfile.read_tokens``)."""
TRACE_COLUMNS = (
    _a(PROMPT_OFFSETS, "int64", "traces+1"),
    _a(RESPONSE_OFFSETS, "int64", "traces+1"),
    _a(TRACE_SESSION, "int64", "traces"),
    _a(TRACE_REWARD, "float64", "traces", "reward"),
    _text(FINISH_REASON, "traces", "finish_reason"),
    _text(POLICY, "traces", "policy", since=2, decode=token_policy),
    Column(TRAINABLE, "array", "uint8", "traces", since=3, field="trainable", decode=flag, legacy_key="trainable"),
    _text(FILTER, "traces", "filter", since=3, encode=join_reasons, decode=split_reasons, legacy_key="filter"),
    Column(TRACE_BLOB, "blob", "uint8", "traces"),
)
"""Every ``Trace`` field is a column's ``field`` or a field of ``TraceBlob`` (tests/unit/store/test_columns.py).
A column added later (``since`` > 1) reads as its field's default in older shards unless it has a legacy_key."""
TRACE_FIELD_COLUMNS = tuple(c for c in TRACE_COLUMNS if c.field is not None)
"""The per-trace columns that hold a ``Trace`` field (one item per trace)."""
SESSION_COLUMNS = (
    _text(SESSION_KEY, "sessions", "key"),
    _text(TASK_ID, "sessions", "task_id"),
    _a(SAMPLE_INDEX, "int64", "sessions", "sample_index"),
    _a(ATTEMPT, "int64", "sessions", "attempt"),
    Column(STATUS, "array", "uint8", "sessions", field="trajectory.status", encode=int, decode=TraceStatus),
    Column(SESSION_REWARD, "array", "float64", "sessions", field="reward", view="session_reward"),
    _a(DURATION_S, "float64", "sessions", "duration_s"),
    _text(HARNESS, "sessions", "harness"),
    _text(MODEL, "sessions", "model"),
    _a(POLICY_VERSION, "int64", "sessions", "policy_version"),
    _a(GATEWAY_RANK, "int64", "sessions", "gateway_rank"),
    _a(TRACE_OFFSETS, "int64", "sessions+1"),
    Column(SESSION_BLOB, "blob", "uint8", "sessions"),
)
"""One row per session; a ``SessionResult`` attribute each (``field``), bar the shard's structure. From this table
the writer writes them, ``sessions.read_sessions`` reads them (a column a shard is older than: the field's
default), and ``TraceView``, the rebuilt ``SessionResult`` and ``shards export`` carry them, by ``name``."""
SESSION_FIELD_COLUMNS = tuple(c for c in SESSION_COLUMNS if c.field is not None)
ALL_COLUMNS = TOKEN_COLUMNS + TRACE_COLUMNS + SESSION_COLUMNS
COLUMNS = {c.path: c for c in ALL_COLUMNS}


class TraceBlob(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The non-token fields of one Trace."""

    prompt_messages: list[ChatMessage] = msgspec.field(default_factory=list)
    response_messages: list[ChatMessage] = msgspec.field(default_factory=list)
    tools: list[ToolSpec] = msgspec.field(default_factory=list)
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class SessionBlob(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The fields of a SessionResult that are not session-table columns."""

    stats: ReconstructionStats = msgspec.field(default_factory=ReconstructionStats)
    error: str | None = None
    evaluation: EvalResult | None = None
    timings: dict[str, float] = msgspec.field(default_factory=dict)
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


def offsets_name(path: str) -> str:
    return f"{path}_offsets"


def columns_of(version: int = SCHEMA_VERSION) -> tuple[Column, ...]:
    """The columns a shard of schema ``version`` holds."""
    return tuple(c for c in ALL_COLUMNS if c.since <= version)


def legacy_keys(version: int) -> tuple[str, ...]:
    """The trace-blob metadata keys that held a column's value in a shard of schema ``version``."""
    return tuple(c.legacy_key for c in TRACE_FIELD_COLUMNS if c.legacy_key is not None and c.since > version)


def dataset_names(version: int = SCHEMA_VERSION) -> list[str]:
    """Every dataset a shard of schema ``version`` must hold."""
    names: list[str] = []
    for c in columns_of(version):
        names.append(c.path)
        if c.kind != "array":
            names.append(offsets_name(c.path))
    return names


def expected_rows(length: Length, sizes: dict[str, int]) -> int:
    if length.endswith("+1"):
        return sizes[length[:-2]] + 1
    return sizes[length]


def check_attributes(f: Any) -> list[str]:
    """Schema name and version of an open ``h5py.File``."""
    attrs = f.attrs
    name = attrs.get(ATTR_SCHEMA)
    if isinstance(name, np.generic):
        name = name.item()
    if isinstance(name, bytes):
        name = name.decode()
    if name != SCHEMA_NAME:
        return [f"attribute {ATTR_SCHEMA}: expected {SCHEMA_NAME!r}, found {name!r}"]
    version = schema_version(f)
    if version not in READABLE_VERSIONS:
        return [f"attribute {ATTR_SCHEMA_VERSION}: expected one of {list(READABLE_VERSIONS)}, found {version!r}"]
    return []


def top_width(f: Any) -> int:
    """k of an open shard's top-k columns (the ``top_logprobs`` attribute; 0 when absent)."""
    k = f.attrs.get(ATTR_TOP_LOGPROBS, 0)
    return int(k.item() if isinstance(k, np.generic) else k)


def schema_version(f: Any) -> Any:
    """The ``schema_version`` attribute of an open shard (a Python value)."""
    version = f.attrs.get(ATTR_SCHEMA_VERSION)
    return version.item() if isinstance(version, np.generic) else version


class ShardLike(Protocol):
    """What the checks need from an open shard (``shardfile.Shard``)."""

    @property
    def attrs(self) -> Any: ...
    def names(self) -> set[str]: ...
    def shape(self, name: str) -> tuple[int, ...]: ...
    def dtype(self, name: str) -> np.dtype[Any]: ...
    def read(self, name: str) -> np.ndarray: ...


def check_structure(f: ShardLike) -> list[str]:
    """Schema checks that read attributes, shapes and the small offset columns only (no token data).

    Returns problems as text; empty when the layout is sound.
    """
    problems = check_attributes(f)
    if problems:
        return problems
    present = f.names()
    version = int(schema_version(f))
    missing = [n for n in dataset_names(version) if n not in present]
    if missing:
        return [f"missing datasets: {', '.join(missing)}"]
    sizes = {
        "traces": f.shape(TRACE_SESSION)[0],
        "sessions": f.shape(SAMPLE_INDEX)[0],
        "prompt": f.shape(PROMPT_IDS)[0],
        "response": f.shape(RESPONSE_IDS)[0],
    }
    sizes["response_top"] = sizes["response"] * top_width(f)
    for c in columns_of(version):
        shape, dtype = f.shape(c.path), f.dtype(c.path)
        if dtype != np.dtype(c.dtype) or len(shape) != 1:
            problems.append(f"{c.path}: expected 1-D {c.dtype}, found {dtype} shape {shape}")
            continue
        rows = expected_rows(c.length, sizes)
        if c.kind == "array":
            if shape[0] != rows:
                problems.append(f"{c.path}: expected {rows} rows ({c.length}), found {shape[0]}")
            continue
        name = offsets_name(c.path)
        if f.dtype(name) != np.dtype("int64") or f.shape(name) != (rows + 1,):
            problems.append(f"{name}: expected int64 [{rows + 1}], found {f.dtype(name)} {f.shape(name)}")
            continue
        problems += check_offsets(name, f.read(name), shape[0])
    if problems:
        return problems
    for name, total in ((PROMPT_OFFSETS, "prompt"), (RESPONSE_OFFSETS, "response"), (TRACE_OFFSETS, "traces")):
        problems += check_offsets(name, f.read(name), sizes[total])
    return problems


def check_offsets(name: str, off: np.ndarray, total: int) -> list[str]:
    if off.shape[0] == 0 or off[0] != 0:
        return [f"{name}: must start at 0"]
    if off[-1] != total:
        return [f"{name}: ends at {int(off[-1])}, the data holds {total}"]
    bad = np.flatnonzero(np.diff(off) < 0)
    if bad.size:
        return [f"{name}: decreases at row {int(bad[0])}"]
    return []
