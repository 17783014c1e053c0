"""The metadata JSON of the shards: typed ``SessionResult`` and ``Trace`` fields kept under their metadata keys.

Processes exchange typed fields (``SessionResult.group`` and ``.agent``, ``Trace.meta``); a shard stores one JSON
object per session and one per trace, with those fields as the plain keys they were before they were typed. Both
directions live here only, so shards keep their keys and old shards read: :func:`to_shard_metadata` /
:func:`trace_to_shard` write the keys, :func:`from_shard_metadata` / :func:`trace_from_shard` read them back (a
wrong or missing field is a ``msgspec.ValidationError``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from polar_hpc.wire.codec import to_json
from polar_hpc.wire.ids import GroupTag
from polar_hpc.wire.results import AgentOutcome, SessionNotes, SessionResult
from polar_hpc.wire.traces import TraceMeta

GROUP_KEYS = ("group_id", "base_task_id", "rollout_step", "policy_version")
"""The keys of a :class:`GroupTag` in the session metadata (written by trainers before it was typed)."""
AGENT_KEY = "agent"
"""``SessionResult.agent`` in the session metadata: ``{status, returncode, detail}``."""
SESSION_METADATA_FIELDS = ("group", "agent", "notes")
"""The ``SessionResult`` fields a shard keeps as keys of the session blob's ``metadata`` object (``released`` is
never in a shard: a released attempt is set aside)."""
NOTE_KEYS = frozenset(SessionNotes.__struct_fields__)
"""The keys of ``SessionResult.notes`` in the session metadata."""
TRACE_META_KEYS = frozenset(TraceMeta.__struct_fields__)
TRACE_METADATA_FIELDS = ("meta", "extra")
"""The ``Trace`` fields a shard keeps together as the trace blob's ``metadata`` object."""


def to_shard_metadata(result: SessionResult) -> dict[str, Any]:
    """``result.metadata`` with its typed fields added under their keys: what a shard stores."""
    meta = dict(result.metadata)
    if result.group is not None:
        meta.update(msgspec.to_builtins(result.group))
    if result.agent is not None:
        a = result.agent
        meta[AGENT_KEY] = {"status": a.status, "returncode": a.returncode, "detail": a.detail}
    meta.update(msgspec.to_builtins(result.notes))
    return meta


def from_shard_metadata(result: SessionResult) -> SessionResult:
    """``result`` with the typed fields a shard keeps in its metadata moved out of ``metadata`` (the user's own
    task fields stay there). A group tag is all of :data:`GROUP_KEYS` (what trainers write); fewer of them are the
    user's own fields (a task submitted with its own ``group_id``), and so is an ``agent`` or a note's key with a
    value of another type."""
    meta = dict(result.metadata)
    try:
        if all(k in meta for k in GROUP_KEYS):
            result.group = msgspec.convert({k: meta.pop(k) for k in GROUP_KEYS}, GroupTag)
        if AGENT_KEY in meta and (agent := agent_of(meta)) is not None:
            result.agent = agent
            del meta[AGENT_KEY]
        if named := NOTE_KEYS & meta.keys():
            result.notes = _notes(meta, named)
    except msgspec.ValidationError as err:
        raise msgspec.ValidationError(f"session {result.key!r} metadata: {err}") from None
    result.metadata = meta
    return result


def _notes(meta: dict[str, Any], named: frozenset[str]) -> SessionNotes:
    """The notes among the ``named`` keys of ``meta``, taken out of it; a key whose value is not its note's type
    stays (a task's own field)."""
    found = {k: meta[k] for k in named}
    try:
        notes = msgspec.convert(found, SessionNotes)
    except msgspec.ValidationError:
        found = {k: v for k, v in found.items() if _is_note(k, v)}
        notes = msgspec.convert(found, SessionNotes)
    for k in found:
        del meta[k]
    return notes


def _is_note(key: str, value: Any) -> bool:
    """Whether ``value`` has the type of the note ``key`` (the system writes only those; any other value under the
    name is a task's own field, e.g. its own ``session_id``)."""
    try:
        msgspec.convert({key: value}, SessionNotes)
    except msgspec.ValidationError:
        return False
    return True


def session_json(result: SessionResult) -> dict[str, Any]:
    """``result`` as a JSON object in the shape it had before its fields were typed (metadata keys, ``released``
    among them): what the HTTP facade sends to its clients, which need not run this version."""
    out: dict[str, Any] = msgspec.json.decode(to_json(result))
    for name in ("group", "agent", "released", "notes"):
        out.pop(name, None)
    out["metadata"] = to_shard_metadata(result)
    if result.released is not None:
        out["metadata"]["released"] = msgspec.to_builtins(result.released)
    for t, tr in zip(out["trajectory"]["traces"], result.trajectory.traces, strict=True):
        t.pop("meta", None)
        t.pop("extra", None)
        t["metadata"] = trace_to_shard(tr.meta, tr.extra)
    return out


def agent_of(metadata: dict[str, Any]) -> AgentOutcome | None:
    """The agent outcome in a shard's session metadata (None: the harness did not run, or ``agent`` is a task's
    own field)."""
    try:
        return msgspec.convert(metadata.get(AGENT_KEY), AgentOutcome | None)
    except msgspec.ValidationError:
        return None


def trace_to_shard(meta: TraceMeta, extra: dict[str, Any]) -> dict[str, Any]:
    """A trace's metadata JSON object: the builder's fields and the caller's own keys."""
    return {**extra, **msgspec.to_builtins(meta)}


def trace_from_shard(metadata: dict[str, Any]) -> tuple[TraceMeta, dict[str, Any]]:
    """(the builder's fields, the other keys) of a trace's metadata JSON object."""
    if metadata.keys() <= TRACE_META_KEYS:  # the usual case: no caller's own keys
        return msgspec.convert(metadata, TraceMeta), {}
    known: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for k, v in metadata.items():
        (known if k in TRACE_META_KEYS else extra)[k] = v
    return msgspec.convert(known, TraceMeta), extra
