"""Session identities (``task/sample#attempt``, formatted and parsed here only) and GRPO group tags.

A session id crosses processes as a string (the proxy's API key, record files, the shell harness's
``POLAR_SESSION_ID``); :class:`SessionId` is what code holds. The key ``task/sample`` names a sample across its
attempts (the coordinator's queue, the shards).
"""

from __future__ import annotations

import re
from typing import Annotated

import msgspec

from polar_hpc.wire.versions import INITIAL, PolicyVersion, WeightVersion

_SESSION_ID = re.compile(r"^(?P<task>.+)/(?P<sample>\d+)#(?P<attempt>\d+)$")
_SESSION_KEY = re.compile(r"^(?P<task>.+)/(?P<sample>\d+)$")


class SessionId(msgspec.Struct, frozen=True, kw_only=True):
    """One attempt at one sample of one task."""

    task_id: str
    sample: int = 0
    attempt: int = 0

    @property
    def key(self) -> str:
        """``task/sample``: the sample across its attempts."""
        return f"{self.task_id}/{self.sample}"

    def __str__(self) -> str:
        return f"{self.key}#{self.attempt}"

    @classmethod
    def of_key(cls, key: str, attempt: int = 0) -> SessionId:
        """The attempt ``attempt`` of the sample ``key`` (``task/sample``); ``ValueError`` for any other text."""
        m = _SESSION_KEY.match(key)
        if m is None:
            raise ValueError(f"not a session key (task/sample): {key!r}")
        return cls(task_id=m["task"], sample=int(m["sample"]), attempt=attempt)

    @classmethod
    def parse(cls, text: str) -> SessionId:
        """The id :meth:`__str__` wrote; ``ValueError`` naming the text for any other."""
        m = _SESSION_ID.match(text)
        if m is None:
            raise ValueError(f"not a session id (task/sample#attempt): {text!r}")
        return cls(task_id=m["task"], sample=int(m["sample"]), attempt=int(m["attempt"]))

    @classmethod
    def parse_foreign(cls, text: str) -> SessionId:
        """Like :meth:`parse`, but an id the gateway did not make (a standalone proxy's ``session-0``, a caller's
        own key) is a task of its own: sample 0, attempt 0."""
        try:
            return cls.parse(text)
        except ValueError:
            return cls(task_id=text)


def task_of_key(key: str) -> str:
    """The task id of a session key ``task/sample``; text that is not a key is a task id itself."""
    m = _SESSION_KEY.match(key)
    return m["task"] if m is not None else key


class GroupTag(msgspec.Struct, frozen=True, kw_only=True):
    """A GRPO group: one task submitted by a trainer as ``num_samples`` sessions of one prompt, at one rollout step,
    under one policy version. The submitted task's id is :attr:`group_id` (unique per step), its prompt
    :attr:`base_task_id`'s."""

    group_id: str
    base_task_id: str
    rollout_step: Annotated[int, msgspec.Meta(ge=0)] = 0
    policy_version: PolicyVersion = INITIAL

    @classmethod
    def new(cls, base_task_id: str, rollout_step: int, policy_version: int, *, suffix: str = "") -> GroupTag:
        """The group of ``base_task_id`` at ``rollout_step``: id ``{task}@step{N}{suffix}`` (a ``suffix`` tells
        apart groups of one task in one step). The id is only ever compared, never parsed."""
        return cls(group_id=f"{base_task_id}@step{rollout_step}{suffix}", base_task_id=base_task_id,
                   rollout_step=rollout_step, policy_version=WeightVersion(policy_version))
