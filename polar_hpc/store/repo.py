"""Which repository a task belongs to: ``metadata["repo"]``, else derived from a SWE-style task id."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_SWE_ID = re.compile(r"^(?P<owner>[^/]+?)__(?P<name>.+)-\d+$")
_NUMBERED = re.compile(r"^(?P<stem>.+?)[-_/]\d+$")


def repo_of(task_id: str, metadata: Mapping[str, Any] | None = None) -> str:
    """``metadata["repo"]`` when it is a string; ``owner__name-123`` -> ``owner/name`` (SWE-bench / SWE-Gym
    instance ids); ``stem-123`` / ``stem/123`` -> ``stem``; otherwise the task id itself."""
    if metadata:
        repo = metadata.get("repo")
        if isinstance(repo, str) and repo:
            return repo
    m = _SWE_ID.match(task_id)
    if m:
        return f"{m['owner']}/{m['name']}"
    m = _NUMBERED.match(task_id)
    return m["stem"] if m else task_id
