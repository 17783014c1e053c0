"""In-flight weight updates (``trainer.staleness = "in_flight"``): which version sampled each token, and what a
step does with tokens that lag the trainer too far.

With in-flight updates the engines switch weights between the calls of a running session, so one session (one
chain, even) holds tokens of several versions. Every completion record names the version that sampled it
(``CompletionRecord.weight_version``) and the builders keep it per token (``Trace.response_versions``), which the
rows carry as ``Completion.versions`` (``mismatch.sampled_versions``). The TIS correction already uses each token's own
sampling logprob; what is left is the bound (as AReaL's ``max_head_offpolicyness`` and PipelineRL's lag bound):
the trainer at version ``now`` (optimizer steps done) trains a token sampled at version ``v`` only if
``now - v <= max_off_policy_steps``. A session with a token past the bound is, by ``trainer.stale_sessions``:

- ``drop``: left out whole (a placeholder, out of the group baseline), or
- ``mask``: its stale tokens get loss mask 0; it still trains on its fresh tokens (left out when none is left).

Versions are numbers (``wire.versions``: ``default`` is 0, ``"N"`` is N). A token whose version is not recorded
(old traces, the stub engine) is ``UNKNOWN`` and never judged stale.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from polar_hpc.config.run import StaleSessions
from polar_hpc.wire.versions import UNKNOWN


def stale_tokens(versions: np.ndarray, now: int, bound: int) -> np.ndarray:
    """Bool per position: sampled at a known version more than ``bound`` versions before ``now``."""
    out: np.ndarray = (versions != UNKNOWN) & (now - versions > bound)
    return out


def version_span(versions: Sequence[np.ndarray]) -> int:
    """How many distinct known versions sampled the trainable tokens of one session (its rows' ``versions``)."""
    seen: set[int] = set()
    for v in versions:
        seen.update(int(x) for x in np.unique(v) if x != UNKNOWN)
    return len(seen)


def oldest(versions: Sequence[np.ndarray]) -> int:
    """The oldest known version among a session's sampled tokens (``UNKNOWN`` when none is known)."""
    known = [int(v[v != UNKNOWN].min()) for v in versions if (v != UNKNOWN).any()]
    return min(known) if known else UNKNOWN


def bound_session(masks: list[np.ndarray], versions: list[np.ndarray], *, now: int, bound: int,
                  policy: StaleSessions) -> tuple[list[np.ndarray] | None, int]:
    """One session's rows under the bound: the loss masks to train with (None: the session is left out) and how
    many trainable tokens were stale. ``masks`` and ``versions`` are per row, response-aligned."""
    stale = [stale_tokens(v, now, bound) & (m > 0) for m, v in zip(masks, versions, strict=True)]
    n = int(sum(int(s.sum()) for s in stale))
    if n == 0:
        return masks, 0
    if policy == "drop":
        return None, n
    kept = [np.where(s, 0, m).astype(m.dtype) for m, s in zip(masks, stale, strict=True)]
    return (kept if any(bool(k.any()) for k in kept) else None), n


class StaleBound(msgspec.Struct, kw_only=True, frozen=True):
    """What ``batch.group_completions`` applies to each session with in-flight updates."""

    now: int
    """The trainer's version: optimizer steps done when the step's rows are built."""
    max_lag: int
    """``trainer.max_off_policy_steps``."""
    policy: StaleSessions = "drop"
