"""What every trajectory builder shares: the Builder base, per-strategy options, the training filter."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import msgspec
import numpy as np

from polar_hpc.config.base import StrictStruct, decode
from polar_hpc.config.run import BuilderSpec
from polar_hpc.wire.calls import CompletionRecord
from polar_hpc.wire.traces import (
    ReconstructionStats,
    RetriedAbort,
    Trace,
    TraceMeta,
    TraceStatus,
    Trajectory,
    unfinished_filter,
)
from polar_hpc.wire.versions import UNKNOWN, ordered_names, parse_version

UNPARSED_TOOL_MARKERS = ("<tool_call>", "<function=")
NOT_SAMPLED = UNKNOWN
"""``Trace.response_versions`` of a position no call sampled (interstitial tokens)."""


class NoOptions(StrictStruct):
    """A strategy without options."""


class Builder(ABC):
    """Turns one session's completion records into a Trajectory. Subclasses set ``name`` and ``Options``."""

    name: ClassVar[str] = ""
    Options: ClassVar[type[msgspec.Struct]] = NoOptions

    def __init__(self, spec: BuilderSpec | None = None, *, end_of_turn_id: int | None = None) -> None:
        self.spec = spec or BuilderSpec(name=self.name)
        self.options: Any = decode(dict(self.spec.options), self.Options, source=f"builder {self.spec.name!r} options")
        self.end_of_turn_id = end_of_turn_id

    def build(self, records: Sequence[CompletionRecord], status: TraceStatus = TraceStatus.COMPLETED) -> Trajectory:
        ordered = sorted(records, key=lambda r: r.index)
        kept = [r for r in ordered if self.spec.include_side_requests or not r.side_request]
        stats = ReconstructionStats(builder=self.name or self.spec.name, completions=len(ordered),
                                    side_requests_excluded=len(ordered) - len(kept))
        kept, retried = drop_retried_aborts(kept)
        traces = self._build(kept, stats)
        forced = {r.completion_id for r in kept if r.policy == "oracle"}
        for tr in traces:
            if forced and any(c in forced for c in tr.meta.completion_ids):
                tr.policy = "oracle"
            if retried:
                tr.meta.retried_aborts = list(retried)
            mark_training_filter(tr, status)
            stats.tokens_trainable += int(tr.loss_mask.sum())
            stats.tokens_masked += int(tr.loss_mask.shape[0] - tr.loss_mask.sum())
        return Trajectory(status=status, traces=traces, stats=stats)

    @abstractmethod
    def _build(self, records: list[CompletionRecord], stats: ReconstructionStats) -> list[Trace]:
        """Records are in arrival order, side requests already removed unless asked for."""


def drop_retried_aborts(records: list[CompletionRecord]) -> tuple[list[CompletionRecord], list[RetriedAbort]]:
    """A call aborted because its client went away (a harness retrying a stream) and sent again with the same
    prompt: the later call is the turn; the aborted one is left out (one trainable copy of a turn) and noted."""
    last_of: dict[bytes, CompletionRecord] = {}
    for r in records:
        last_of[np.asarray(r.prompt_ids, dtype=np.int32).tobytes()] = r
    kept: list[CompletionRecord] = []
    notes: list[RetriedAbort] = []
    for r in records:
        later = last_of[np.asarray(r.prompt_ids, dtype=np.int32).tobytes()]
        if r.finish_reason == "abort" and later is not r:
            notes.append(RetriedAbort(completion_id=r.completion_id, index=r.index, sampled_tokens=len(r.output_ids),
                                      retried_by=later.completion_id))
        else:
            kept.append(r)
    return kept, notes


def unparsed_tool_call(rec: CompletionRecord) -> str | None:
    """Why this completion's tool call did not parse, or None."""
    if rec.parse_error:
        return rec.parse_error
    if not rec.response.tool_calls and any(m in rec.response.content for m in UNPARSED_TOOL_MARKERS):
        return "tool-call markup left in the reply content"
    return None


def completion_metadata(records: Sequence[CompletionRecord]) -> TraceMeta:
    """The ``TraceMeta`` fields every builder writes for the completions of one trace."""
    errors = {r.completion_id: e for r in records if (e := unparsed_tool_call(r)) is not None}
    versions = ordered_names(r.weight_version for r in records if r.weight_version is not None)
    return TraceMeta(
        session_id=records[0].session_id if records else "",
        completion_ids=[r.completion_id for r in records],
        completion_indices=[r.index for r in records],
        render_modes=[r.render_mode for r in records],
        divergence_tokens=[r.divergence_tokens for r in records],
        weight_versions=versions,
        sampling=[r.sampling for r in records],
        unparsed_tool_calls=errors,
        engine_time_s=sum(max(0.0, r.timings.engine_end - r.timings.engine_start) for r in records),
    )


def mark_training_filter(trace: Trace, status: TraceStatus) -> None:
    """Mark (never drop) what a trainer should mask: unfinished sessions, unparsed tool calls."""
    reasons: list[str] = []
    if status != TraceStatus.COMPLETED:
        reasons.append(unfinished_filter(status))
    if trace.meta.unparsed_tool_calls:
        reasons.append("unparsed_tool_call")
    trace.filter = reasons
    trace.trainable = not reasons


def sampled_versions(rec: CompletionRecord, n: int) -> np.ndarray:
    """``n`` copies of the version number that sampled ``rec`` (``Trace.response_versions``; -1: not recorded)."""
    return np.full(n, parse_version(rec.weight_version), dtype=np.int32)


def top_width(records: Sequence[CompletionRecord]) -> int:
    """k of the records' top-k logprobs (the widest; 0: none recorded)."""
    return max((r.output_top_ids.shape[0] // r.output_ids.shape[0] for r in records if r.output_ids.shape[0]),
               default=0)


def top_part(rec: CompletionRecord | None, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` positions of top-k (flat, ``n * k``): ``rec``'s own where it recorded them (narrower rows padded),
    else -1 / NaN (interstitial tokens: ``rec`` None)."""
    ids = np.full((n, k), NOT_SAMPLED, dtype=np.int32)
    lps = np.full((n, k), np.nan, dtype=np.float32)
    if rec is not None and n and rec.output_top_ids.shape[0]:
        w = rec.output_top_ids.shape[0] // n
        ids[:, :w] = rec.output_top_ids.reshape(n, w)
        lps[:, :w] = rec.output_top_logprobs.reshape(n, w)
    return ids.reshape(-1), lps.reshape(-1)


def recorded_versions(versions: np.ndarray) -> np.ndarray:
    """``Trace.response_versions`` as stored: empty when no token's version is known (the same information, and
    what a shard reads back for it)."""
    return versions if bool((versions != UNKNOWN).any()) else np.zeros(0, dtype=np.int32)


def sampled_part(rec: CompletionRecord) -> tuple[np.ndarray, np.ndarray]:
    """The sampled ids and their logprobs, checked to have the same length."""
    ids = np.asarray(rec.output_ids, dtype=np.int32)
    lps = np.asarray(rec.output_logprobs, dtype=np.float32)
    if ids.shape != lps.shape:
        raise ValueError(f"completion {rec.completion_id}: {ids.shape[0]} output ids but {lps.shape[0]} logprobs")
    return ids, lps
