"""Full shard validation: schema plus every invariant of the data (reads token columns and blobs)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from polar_hpc.store import schema as S
from polar_hpc.store.encode import blob_items, decode_session_blob, decode_trace_blob
from polar_hpc.store.schema import TRACE_FIELD_COLUMNS
from polar_hpc.store.sessions import SessionTable, read_sessions
from polar_hpc.store.shardfile import (
    ShardError,
    open_shard,
    read_items,
    read_session_blobs,
    read_tokens,
    read_traces,
    resolve_shards,
)
from polar_hpc.wire.traces import TraceStatus

MAX_PER_CHECK = 20
"""Violations listed per check and file; the rest are counted in one line."""


class Violation(msgspec.Struct, frozen=True, kw_only=True):
    file: str
    message: str
    session: str | None = None
    trace: int | None = None
    """Trace index within the session."""

    def __str__(self) -> str:
        where = self.file
        if self.session is not None:
            where += f" session {self.session!r}"
        if self.trace is not None:
            where += f" trace {self.trace}"
        return f"{where}: {self.message}"


def validate_paths(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> tuple[int, list[Violation]]:
    """(shard files checked, violations). Unresolvable paths are violations too."""
    files, problems = resolve_shards(paths)
    out = [Violation(file=p.split(": ", 1)[0], message=p.split(": ", 1)[-1]) for p in problems]
    for f in files:
        out += validate_shard(f)
    return len(files), out


def validate_shard(path: Path) -> list[Violation]:
    file = str(path)
    try:
        with open_shard(path) as f:
            st = read_sessions(f)
            tr = read_traces(f, fields=False)
            tok = read_tokens(f)
            sblobs = read_session_blobs(f)
            items = {c.path: read_items(f, c) for c in TRACE_FIELD_COLUMNS if f.version >= c.since}
    except ShardError as err:
        return [Violation(file=file, message=str(err).removeprefix(f"{path}: "))]
    except (OSError, KeyError, ValueError) as err:
        return [Violation(file=file, message=f"unreadable: {err}")]
    out: list[Violation] = []
    n_sessions = len(st)
    to = st.trace_offsets
    owner = np.repeat(np.arange(n_sessions, dtype=np.int64), np.diff(to))
    local = np.arange(owner.shape[0], dtype=np.int64) - to[owner] if owner.size else owner

    def at_trace(t: int, message: str) -> Violation:
        s = int(owner[t])
        return Violation(file=file, session=st.keys[s], trace=int(local[t]), message=message)

    def report(items: list[Violation], what: str) -> None:
        out.extend(items[:MAX_PER_CHECK])
        if len(items) > MAX_PER_CHECK:
            out.append(Violation(file=file, message=f"{len(items) - MAX_PER_CHECK} more: {what}"))

    bad_rows = np.flatnonzero(tr.session != owner)
    report(
        [
            at_trace(int(t), f"{S.TRACE_SESSION} is {int(tr.session[t])}, session ranges say {int(owner[t])}")
            for t in bad_rows
        ],
        f"{S.TRACE_SESSION} mismatches",
    )
    out += _session_checks(file, st, sblobs)
    for t, blob in enumerate(blob_items(tr.blob, tr.blob_offsets)):
        try:
            decode_trace_blob(blob)
        except (msgspec.DecodeError, ValueError) as err:
            out.append(at_trace(t, f"trace blob does not decode: {err}"))

    def token_check(positions: np.ndarray, offsets: np.ndarray, message: str) -> None:
        shown = positions[:MAX_PER_CHECK]
        traces = np.searchsorted(offsets, shown, side="right") - 1
        for p, t in zip(shown.tolist(), traces.tolist(), strict=True):
            out.append(at_trace(t, f"{message} at token {p - int(offsets[t])}"))
        if positions.size > MAX_PER_CHECK:
            out.append(Violation(file=file, message=f"{positions.size - MAX_PER_CHECK} more: {message}"))

    values: dict[str, list[Any]] = {}
    for c in TRACE_FIELD_COLUMNS:
        if c.path in items:
            values[c.path], bad = _decode_items(c, items[c.path], at_trace)
            report(bad, f"bad {c.path} values")
    if S.TRAINABLE in values and S.FILTER in values:
        report([at_trace(t, f"{S.TRAINABLE} is 1 but {S.FILTER} gives reasons {items[S.FILTER][t]!r}")
                for t, (ok, reasons) in enumerate(zip(values[S.TRAINABLE], values[S.FILTER], strict=True))
                if ok is True and reasons], f"traces with {S.FILTER} reasons but {S.TRAINABLE} 1")
    token_check(np.flatnonzero(tok.prompt_ids < 0), tr.prompt_offsets, "negative prompt token id")
    token_check(np.flatnonzero(tok.response_ids < 0), tr.response_offsets, "negative response token id")
    token_check(np.flatnonzero(tok.loss_mask > 1), tr.response_offsets, "loss_mask value not 0/1")
    unscored = (tok.loss_mask == 1) & ~np.isfinite(tok.response_logprobs)
    token_check(np.flatnonzero(unscored), tr.response_offsets, "loss_mask 1 without a finite logprob")
    token_check(np.flatnonzero((tok.loss_mask == 1) & (tok.response_logprobs > 0)), tr.response_offsets,
                "loss_mask 1 with a positive logprob (not the engine's)")
    return out


def _decode_items(c: S.Column, items: list[Any],
                  at_trace: Callable[[int, str], Violation]) -> tuple[list[Any], list[Violation]]:
    """(each item decoded by ``c.decode``, None where it fails; a violation for each failure)."""
    if c.decode is None:
        return items, []
    out: list[Any] = []
    bad: list[Violation] = []
    for t, item in enumerate(items):
        try:
            out.append(c.decode(item))
        except ValueError as err:
            out.append(None)
            bad.append(at_trace(t, f"{c.path} {err}"))
    return out, bad


def _session_checks(file: str, st: SessionTable, sblobs: list[memoryview]) -> list[Violation]:
    out: list[Violation] = []
    seen: set[str] = set()
    valid_status = {int(s) for s in TraceStatus}
    for i, key in enumerate(st.keys):
        want = f"{st.task_ids[i]}/{int(st.sample_index[i])}"
        if key != want:
            out.append(
                Violation(file=file, session=key, message=f"key does not match task_id/sample_index {want!r}")
            )
        if key in seen:
            out.append(Violation(file=file, session=key, message="session key appears twice in this shard"))
        seen.add(key)
        if int(st.status[i]) not in valid_status:
            out.append(
                Violation(
                    file=file,
                    session=key,
                    message=f"status {int(st.status[i])} not in {sorted(valid_status)}",
                )
            )
        try:
            decode_session_blob(sblobs[i])
        except (msgspec.DecodeError, ValueError) as err:
            out.append(Violation(file=file, session=key, message=f"session blob does not decode: {err}"))
    return out
