"""``TraceView``: one trace of a shard as views into its columns, with its session's columns by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Generic, TypeVar

import msgspec
import numpy as np

from polar_hpc.store.encode import decode_trace_blob
from polar_hpc.store.schema import TraceBlob
from polar_hpc.wire.traces import TraceStatus

T = TypeVar("T")


class _Field(Generic[T]):
    """A ``TraceView`` attribute read from its trace's ``columns`` (by the attribute's name)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, view: TraceView, owner: type) -> T:
        value: T = view.columns[self.name][view.row]
        return value


class _Session(Generic[T]):
    """A ``TraceView`` attribute read from its session's ``session`` values (by the attribute's name)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, view: TraceView, owner: type) -> T:
        value: T = view.session[self.name]
        return value


class TraceView(msgspec.Struct, kw_only=True):
    """One trace with its token arrays as views into the shard's columns (valid while you hold them)."""

    shard: Path
    trace_index: int
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
    session: dict[str, Any]
    """The session's ``schema.SESSION_COLUMNS`` values by name (``SessionTable.row``), shared by its traces;
    attributes too (``key``, ``session_reward`` ...)."""
    columns: dict[str, list[Any]]
    """The shard's ``schema.TRACE_FIELD_COLUMNS`` values by ``Trace`` field name, shared by its views; this trace's
    are at ``row`` (``fields``; these five as attributes too)."""
    row: int
    key = _Session[str]()
    task_id = _Session[str]()
    sample_index = _Session[int]()
    attempt = _Session[int]()
    status = _Session[TraceStatus]()
    session_reward = _Session[float]()
    duration_s = _Session[float]()
    harness = _Session[str]()
    model = _Session[str]()
    policy_version = _Session[int]()
    gateway_rank = _Session[int]()
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
