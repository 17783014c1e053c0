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
from polar_hpc.wire.records import AgentOutcome, SessionResult, TraceMeta

GROUP_KEYS = ("group_id", "base_task_id", "rollout_step", "policy_version")
"""The keys of a :class:`GroupTag` in the session metadata (written by trainers before it was typed)."""
AGENT_KEY = "agent"
"""``SessionResult.agent`` in the session metadata: ``{status, returncode, detail}``."""
SESSION_METADATA_FIELDS = ("group", "agent")
"""The ``SessionResult`` fields a shard keeps as keys of the session blob's ``metadata`` object (``released`` is
never in a shard: a released attempt is set aside)."""
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
    return meta


def from_shard_metadata(result: SessionResult) -> SessionResult:
    """``result`` with the typed fields a shard keeps in its metadata moved out of ``metadata`` (the user's own
    task fields stay there). A group tag is all of :data:`GROUP_KEYS` (what trainers write); fewer of them are the
    user's own fields (a task submitted with its own ``group_id``)."""
    meta = dict(result.metadata)
    try:
        if all(k in meta for k in GROUP_KEYS):
            result.group = msgspec.convert({k: meta.pop(k) for k in GROUP_KEYS}, GroupTag)
        if isinstance(meta.get(AGENT_KEY), dict):
            result.agent = msgspec.convert(meta.pop(AGENT_KEY), AgentOutcome)
    except msgspec.ValidationError as err:
        raise msgspec.ValidationError(f"session {result.key!r} metadata: {err}") from None
    result.metadata = meta
    return result


def session_json(result: SessionResult) -> dict[str, Any]:
    """``result`` as a JSON object in the shape it had before its fields were typed (metadata keys, ``released``
    among them): what the HTTP facade sends to its clients, which need not run this version."""
    out: dict[str, Any] = msgspec.json.decode(to_json(result))
    for name in ("group", "agent", "released"):
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
    """The agent outcome in a shard's session metadata (None: the harness did not run)."""
    raw = metadata.get(AGENT_KEY)
    return msgspec.convert(raw, AgentOutcome) if isinstance(raw, dict) else None


def trace_to_shard(meta: TraceMeta, extra: dict[str, Any]) -> dict[str, Any]:
    """A trace's metadata JSON object: the builder's fields and the caller's own keys."""
    return {**extra, **msgspec.to_builtins(meta)}


def trace_from_shard(metadata: dict[str, Any]) -> tuple[TraceMeta, dict[str, Any]]:
    """(the builder's fields, the other keys) of a trace's metadata JSON object."""
    meta = msgspec.convert({k: v for k, v in metadata.items() if k in TRACE_META_KEYS}, TraceMeta)
    return meta, {k: v for k, v in metadata.items() if k not in TRACE_META_KEYS}
