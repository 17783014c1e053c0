"""In-flight weight updates (``trainer.staleness = "in_flight"``): which version sampled each token, and what a
step does with tokens that lag the trainer too far.

With in-flight updates the engines switch weights between the calls of a running session, so one session (one
chain, even) holds tokens of several versions. Every completion record names the version that sampled it
(``CompletionRecord.weight_version``; the builders keep them per call in ``TraceMeta.call_versions`` with each
call's token count in ``call_tokens``), and the builders lay the calls' sampled tokens out in call order, so the
version of every trainable token is known (``token_versions``). The TIS correction already uses each token's own
sampling logprob; what is left is the bound (as AReaL's ``max_head_offpolicyness`` and PipelineRL's lag bound):
the trainer at version ``now`` (optimizer steps done) trains a token sampled at version ``v`` only if
``now - v <= max_off_policy_steps``. A session with a token past the bound is, by ``trainer.stale_sessions``:

- ``drop``: left out whole (a placeholder, out of the group baseline), or
- ``mask``: its stale tokens get loss mask 0; it still trains on its fresh tokens (left out when none is left).

Versions are the strings the trainer loads (``"1"``, ``"2"``, ...); the initial weights are ``default`` (0). A
token whose version is not recorded (old traces, the stub engine) counts as ``UNKNOWN`` and is never judged stale.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from polar_hpc.config.run import StaleSessions

INITIAL_VERSION = "default"
"""The version name an engine serves before the first push (SGLang's and the reference server's)."""
UNKNOWN = -1
"""A token whose version is not recorded, or a position that was not sampled (loss mask 0)."""


def version_number(name: str | None) -> int:
    """The step number of a weight version name: ``default`` is 0, ``"7"`` is 7; anything else ``UNKNOWN``."""
    if name == INITIAL_VERSION:
        return 0
    if name is not None and name.isdigit():
        return int(name)
    return UNKNOWN


def token_versions(mask: np.ndarray, call_versions: Sequence[str | None], call_tokens: Sequence[int],
                   chain_versions: Sequence[str] = ()) -> np.ndarray:
    """Per response position, the version that sampled it (int64; ``UNKNOWN`` where ``mask`` is 0).

    The k-th position with mask 1 belongs to the call whose cumulative ``call_tokens`` first exceeds k. When the
    counts do not add up to the mask (the per-call columns missing or a mask edited later), every sampled token gets
    the chain's oldest recorded version (``chain_versions``): the conservative reading for the bound."""
    mask = np.asarray(mask)
    out = np.full(mask.shape[0], UNKNOWN, dtype=np.int64)
    sampled = np.flatnonzero(mask > 0)
    if len(call_versions) == len(call_tokens) and sum(call_tokens) == sampled.shape[0] and call_tokens:
        per = np.repeat(np.asarray([version_number(v) for v in call_versions], dtype=np.int64),
                        np.asarray(call_tokens, dtype=np.int64))
        out[sampled] = per
        return out
    known = [n for n in (version_number(v) for v in chain_versions) if n != UNKNOWN]
    out[sampled] = min(known) if known else UNKNOWN
    return out


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
