"""TraceSelect: the one filter over shards, used by the store's reader and tools and by the trainer's index.

Conditions come in three kinds, applied in this order: session columns (no decoding), session metadata
(decodes the session blob: ``metadata``, ``repos``), trace columns (``trainable_only``, ``policies``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
import numpy as np

from polar_hpc.config.run import TokenPolicy
from polar_hpc.store.sessions import SessionTable
from polar_hpc.wire.traces import TraceStatus, trace_status


class TraceSelect(msgspec.Struct, kw_only=True, frozen=True):
    """Which sessions and traces to read; every set field must match. ``None`` = no condition."""

    status: tuple[TraceStatus, ...] | None = None
    min_reward: float | None = None
    """Session (outcome) reward >= this."""
    max_reward: float | None = None
    harness: tuple[str, ...] | None = None
    task_ids: frozenset[str] | None = None
    repos: frozenset[str] | None = None
    """``metadata["repo"]`` or the repository derived from the task id (``polar_hpc.store.repo``)."""
    min_policy_version: int | None = None
    max_policy_version: int | None = None
    metadata: dict[str, Any] | None = None
    """Session metadata (the task's) must hold these key/value pairs."""
    trainable_only: bool = False
    """Drop traces marked not trainable (``Trace.trainable``: unfinished session, unparsed tool call...)."""
    policies: tuple[TokenPolicy, ...] | None = None
    """Keep traces whose tokens these policies produced (``sample``, ``oracle``); RL readers default to sample."""

    def __post_init__(self) -> None:
        normalize_filter(self, type(self).__name__)

    @property
    def needs_session_blobs(self) -> bool:
        return self.repos is not None or bool(self.metadata)

    @property
    def selects_traces(self) -> bool:
        """Whether a condition is on single traces (not whole sessions)."""
        return self.trainable_only or self.policies is not None

    def sessions(self, t: SessionTable) -> np.ndarray:
        """The session-column conditions over one shard's session table, as a bool mask."""
        keep = np.ones(len(t), dtype=bool)
        if self.status is not None:
            keep &= np.isin(t.status, np.array([int(s) for s in self.status], dtype=np.uint8))
        if self.min_reward is not None:
            keep &= t.reward >= self.min_reward
        if self.max_reward is not None:
            keep &= t.reward <= self.max_reward
        if self.harness is not None:
            wanted = set(self.harness)
            keep &= np.fromiter((h in wanted for h in t.harness), dtype=bool, count=len(t))
        if self.task_ids is not None:
            ids = self.task_ids
            keep &= np.fromiter((k in ids for k in t.task_ids), dtype=bool, count=len(t))
        if self.min_policy_version is not None:
            keep &= t.policy_version >= self.min_policy_version
        if self.max_policy_version is not None:
            keep &= t.policy_version <= self.max_policy_version
        return keep

    def session_metadata(self, metadata: Mapping[str, Any] | None, repo: str) -> bool:
        """The metadata conditions for one session (``repo``: ``repo.repo_of`` of it)."""
        if self.metadata and (metadata is None or any(metadata.get(k) != v for k, v in self.metadata.items())):
            return False
        return self.repos is None or repo in self.repos

    def trace(self, trainable: bool, policy: str) -> bool:
        """The trace-column conditions for one trace."""
        if self.trainable_only and not trainable:
            return False
        return self.policies is None or policy in self.policies

    def describe(self) -> str:
        """The set conditions as ``field=value`` text (for messages); ``all traces`` when none is set."""
        parts = []
        for name, value in msgspec.structs.asdict(self).items():
            if value is None or value is False:
                continue
            if name == "status":
                value = ",".join(s.name for s in value)
            elif isinstance(value, tuple | frozenset):
                value = ",".join(sorted(map(str, value)))
            parts.append(f"{name}={value}")
        return "the filter " + " ".join(parts) if parts else "no filter (all traces)"


_COLLECTIONS = {"status": "tuple", "harness": "tuple", "task_ids": "frozenset", "repos": "frozenset"}


def normalize_filter(flt: msgspec.Struct, owner: str) -> None:
    """Check a filter's collection fields and turn status names into ``TraceStatus``; a bad value raises
    ``TypeError``/``ValueError`` naming the field, what it expects and what it got."""
    for name, kind in _COLLECTIONS.items():
        value = getattr(flt, name, None)
        if value is None:
            continue
        if isinstance(value, str | bytes | int) or not isinstance(value, Iterable):
            raise TypeError(f"{owner}.{name}: expected a {kind} of values, got {type(value).__name__} {value!r} "
                            f"(write {name}=({value!r},))")
        items = list(value)
        if name == "status":
            msgspec.structs.force_setattr(flt, name, tuple(trace_status(v) for v in items))
            continue
        bad = [v for v in items if not isinstance(v, str)]
        if bad:
            raise TypeError(f"{owner}.{name}: expected strings, got {type(bad[0]).__name__} {bad[0]!r}")
        msgspec.structs.force_setattr(flt, name, tuple(items) if kind == "tuple" else frozenset(items))
