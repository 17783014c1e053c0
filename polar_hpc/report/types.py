"""What ``polar-hpc report`` computes (:mod:`polar_hpc.report.run`) and draws (:mod:`polar_hpc.report.plots`)."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from polar_hpc.wire.results import TIMING_ORDER


class SessionRow(msgspec.Struct, kw_only=True):
    key: str
    task_id: str
    repo: str
    harness: str
    status: str
    reward: float
    duration_s: float
    turns: int
    tokens: int
    sampled_tokens: int
    timings: dict[str, float]
    reason: str | None
    engine_time_s: float | None
    forced: bool = False
    """The oracle wrote its output tokens (teacher forcing): they were forced, not sampled."""
    run: str = ""
    """The run (as given to ``report``) the session was read from."""


class Dist(msgspec.Struct):
    mean: float
    median: float
    p95: float


class HarnessRow(msgspec.Struct, kw_only=True):
    name: str
    sessions: int
    accepted: int
    rate: float
    mean_reward: float | None
    median_turns: float | None
    median_tokens: float | None
    median_duration_s: float | None
    failures: int
    """Sessions that did not complete (timeout, error)."""


class GroupRow(msgspec.Struct):
    name: str
    instances: int
    sessions: int
    accepted: int
    rate: float
    solved: int
    """Instances with at least one accepted session."""


class RunReport(msgspec.Struct, kw_only=True):
    runs: list[str]
    accept: float
    overall: GroupRow
    repos: list[GroupRow]
    harnesses: list[GroupRow]
    harness_stats: list[HarnessRow]
    statuses: dict[str, int]
    reward_bins: list[float]
    reward_counts: list[int]
    turns: Dist | None
    tokens: Dist | None
    sampled_tokens: Dist | None
    stages: dict[str, Dist]
    """In pipeline order (``TIMING_ORDER``), then any other stage by name."""
    failures: dict[str, int]
    engine_tokens_per_s: float | None
    problems: list[str]
    token_kind: str = "sampled"
    """What the model's output tokens were: ``sampled``, ``forced`` (oracle runs) or ``sampled + forced``."""
    sessions_per_run: dict[str, int] = msgspec.field(default_factory=dict)
    """Sessions read from each run, in the order the runs were given (each run deduplicated on its own)."""


def stage_order(names: Iterable[str]) -> list[str]:
    """Timing keys in pipeline order (``TIMING_ORDER``), then the others by name."""
    rank = {k: i for i, k in enumerate(TIMING_ORDER)}
    return sorted(set(names), key=lambda k: (rank.get(k, len(rank)), k))
