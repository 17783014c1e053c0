"""The session metadata JSON of the shards: typed ``SessionResult`` fields kept under their metadata keys.

Processes exchange the typed fields (``SessionResult.group``); a shard stores one JSON object per session, where
shards written before the fields were typed keep them as plain keys. Both directions live here only, so shards
stay byte-for-byte what they were and old shards read: :func:`to_shard_metadata` writes the keys,
:func:`from_shard_metadata` reads them back (a wrong or missing field is a ``msgspec.ValidationError``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from polar_hpc.wire.ids import GroupTag
from polar_hpc.wire.records import SessionResult

GROUP_KEYS = ("group_id", "base_task_id", "rollout_step", "policy_version")
"""The keys of a :class:`GroupTag` in the session metadata (written by trainers before it was typed)."""


def to_shard_metadata(result: SessionResult) -> dict[str, Any]:
    """``result.metadata`` with its typed fields added under their keys: what a shard stores."""
    meta = dict(result.metadata)
    if result.group is not None:
        meta.update(msgspec.to_builtins(result.group))
    return meta


def from_shard_metadata(result: SessionResult) -> SessionResult:
    """``result`` with the typed fields a shard keeps in its metadata moved out of ``metadata`` (the user's own
    task fields stay there). A group tag is all of :data:`GROUP_KEYS` (what trainers write); fewer of them are the
    user's own fields (a task submitted with its own ``group_id``)."""
    meta = dict(result.metadata)
    if all(k in meta for k in GROUP_KEYS):
        try:
            result.group = msgspec.convert({k: meta.pop(k) for k in GROUP_KEYS}, GroupTag)
        except msgspec.ValidationError as err:
            raise msgspec.ValidationError(f"session {result.key!r}: group tag: {err}") from None
    result.metadata = meta
    return result
