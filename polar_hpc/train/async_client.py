"""Async RL on a running polar-hpc run: submit GRPO groups, receive evaluated groups, push new weights.

    async with AsyncRollouts(run_dir, AsyncConfig(max_off_policy_steps=1)) as ro:
        await ro.submit_group(task, num_samples=8, rollout_step=0)
        async for group in ro.groups():
            samples = group_samples(group)          # tokens, loss mask, rollout logprobs, reward, group id
            ...train...
            await ro.update_policy(checkpoint_dir, version=ro.policy_version + 1)

A group is one submitted task (``num_samples`` sessions of the same prompt); its task id is the group id and
``Task.group`` (``wire.ids.GroupTag``) carries it with the base task, the rollout step and the policy version (the
gateway copies it into every SessionResult). ``groups()`` yields a group once all its samples are back, or
once its task is over (every session terminal) with some samples that never return a result (ERROR, CANCELLED:
counted in ``Group.failed``, as not completed), unless it is stale
(``policy_version - group policy_version > max_off_policy_steps``: dropped, counted in
``stats.stale``) or too few samples completed (``< min_group_fraction``: counted in ``stats.incomplete``).

Mapping to slime's ``Sample`` (``slime/utils/types.py``; no slime import here):

    ==========================  ===========================================================================
    slime ``Sample``            ``TrainSample`` / source
    ==========================  ===========================================================================
    ``group_index``             ``group_id`` (task id of the group; one int per group in slime)
    ``index``                   ``sample_index`` (session sample index within the group)
    ``prompt``                  ``Trace.prompt_messages`` (messages; decode ``prompt_ids`` for text)
    ``tokens``                  ``tokens`` = prompt ids ‖ response ids
    ``response``                the assistant text of ``response_messages`` (not needed for training)
    ``response_length``         ``response_length``
    ``loss_mask``               ``loss_mask[prompt_length:]`` (slime's mask covers the response only)
    ``rollout_log_probs``       ``rollout_logprobs`` (response-aligned, float32)
    ``reward``                  ``reward`` (trace reward; the session's outcome reward broadcast)
    ``status``                  COMPLETED -> ``COMPLETED``; ``finish_reason == "length"`` -> ``TRUNCATED``;
                                TIMEOUT / ERROR -> ``ABORTED`` (here: loss mask all 0, ``masked=True``)
    ``weight_versions``         ``weight_versions`` (from the completion records, per trace)
    ``metadata``                ``metadata`` (the user's task fields) and ``meta`` (``TraceMeta``)
    ==========================  ===========================================================================
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from polar_hpc.coordinator.client import RunClient
from polar_hpc.log import get_logger
from polar_hpc.wire.control import SessionState
from polar_hpc.wire.ids import GroupTag
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.rundir import PolicyRecord, RunDir
from polar_hpc.wire.session import Task
from polar_hpc.wire.traces import TraceMeta, TraceStatus, unfinished_filter
from polar_hpc.wire.versions import engine_name

log = get_logger("train")


class AsyncConfig(msgspec.Struct, kw_only=True, frozen=True):
    max_off_policy_steps: int = 1
    min_group_fraction: float = 1.0
    """Fraction of a group's samples that must have completed (status COMPLETED) for it to be used."""
    pause_mode: str = "retract"
    """``pause_generation`` mode during weight updates: ``retract``/``in_place`` keep in-flight requests."""

    @classmethod
    def from_run(cls, run_dir: str | Path) -> AsyncConfig:
        """The run's ``[trainer]`` section (``run_dir/config.toml``); the defaults when the run has none."""
        run = RunDir(run_dir)
        if not run.exists():
            return cls()
        t = run.load_config().trainer
        return cls(max_off_policy_steps=t.max_off_policy_steps, min_group_fraction=t.min_group_fraction)


class Group(msgspec.Struct, kw_only=True):
    group_id: str
    base_task_id: str
    policy_version: int
    rollout_step: int
    num_samples: int
    results: list[SessionResult]
    failed: int = 0
    """Samples that ended without a result (ERROR, CANCELLED sessions); they count as not completed."""
    submitted_at: float = 0.0
    finished_at: float = 0.0

    @classmethod
    def of(cls, tag: GroupTag, *, num_samples: int, submitted_at: float = 0.0) -> Group:
        return cls(group_id=tag.group_id, base_task_id=tag.base_task_id, policy_version=tag.policy_version,
                   rollout_step=tag.rollout_step, num_samples=num_samples, results=[], submitted_at=submitted_at)

    @property
    def completed_fraction(self) -> float:
        done = sum(1 for r in self.results if r.trajectory.status == TraceStatus.COMPLETED)
        return done / self.num_samples if self.num_samples else 0.0

    @property
    def rewards(self) -> np.ndarray:
        return np.asarray([r.reward for r in sorted(self.results, key=lambda r: r.sample_index)], dtype=np.float32)


class TrainSample(msgspec.Struct, kw_only=True):
    group_id: str
    sample_index: int
    trace_index: int
    tokens: np.ndarray
    """int32: prompt ‖ response."""
    loss_mask: np.ndarray
    """uint8, aligned with ``tokens``: 0 over the prompt; all 0 when ``masked``."""
    rollout_logprobs: np.ndarray
    """float32, response-aligned: the behaviour policy's logprobs."""
    prompt_length: int
    response_length: int
    reward: float
    status: TraceStatus
    masked: bool
    policy_version: int
    weight_versions: list[str]
    metadata: dict[str, Any]
    """The task's own fields and the trace's keys that are not :class:`TraceMeta`'s."""
    meta: TraceMeta = msgspec.field(default_factory=TraceMeta)
    """What the builder recorded about the trace's completions."""
    temperatures: list[float] = msgspec.field(default_factory=list)
    """The distinct temperatures the engine sampled the trace at (``TraceMeta.temperatures``; empty: not recorded)."""
    trainable: bool = True
    """``Trace.trainable``: False when the trace's own marks say to leave it out (``filter`` says why)."""
    filter: list[str] = msgspec.field(default_factory=list)
    harness: str = ""
    """The agent the session ran (``SessionResult.harness``)."""
    response_versions: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    """``Trace.response_versions``: per response token, the weight version that sampled it (empty: not recorded)."""


class AsyncStats(msgspec.Struct, kw_only=True):
    submitted: int = 0
    yielded: int = 0
    stale: int = 0
    incomplete: int = 0
    weight_updates: int = 0
    update_seconds: float = 0.0


def group_samples(group: Group, *, include_oracle: bool = False, keep_timeouts: bool = False) -> list[TrainSample]:
    """Every trace of every session of ``group``; TIMEOUT / ERROR sessions are kept with an all-zero mask (TIMEOUT
    ones with their loss mask where ``keep_timeouts``: their chains are whole calls the policy sampled, trainable
    unless marked for another reason than the timeout's ``session_timeout``).
    Oracle traces (forced tokens, not the behaviour policy's samples) are left out unless ``include_oracle``."""
    out = []
    kept = {TraceStatus.COMPLETED, TraceStatus.TIMEOUT} if keep_timeouts else {TraceStatus.COMPLETED}
    timed_out = [unfinished_filter(TraceStatus.TIMEOUT)]
    for r in sorted(group.results, key=lambda r: r.sample_index):
        masked = r.trajectory.status not in kept
        for j, tr in enumerate(r.trajectory.traces):
            if tr.policy == "oracle" and not include_oracle:
                continue
            pl, rl = int(tr.prompt_ids.shape[0]), int(tr.response_ids.shape[0])
            meta = tr.meta
            mask = np.zeros(pl + rl, dtype=np.uint8)
            if not masked:
                mask[pl:] = tr.loss_mask
            out.append(TrainSample(
                group_id=group.group_id, sample_index=r.sample_index, trace_index=j,
                tokens=np.concatenate([tr.prompt_ids, tr.response_ids]).astype(np.int32, copy=False),
                loss_mask=mask, rollout_logprobs=np.asarray(tr.response_logprobs, dtype=np.float32),
                prompt_length=pl, response_length=rl, reward=float(tr.reward), status=r.trajectory.status,
                masked=masked, policy_version=group.policy_version,
                weight_versions=meta.weight_versions, temperatures=meta.temperatures(),
                metadata={**r.metadata, **tr.extra}, meta=meta, filter=list(tr.filter),
                trainable=tr.trainable or (keep_timeouts and tr.filter == timed_out),
                harness=r.harness, response_versions=tr.response_versions,
            ))
    return out


class AsyncRollouts:
    """GRPO-style async RL against a running run: submit groups, receive evaluated groups, load new weights.

    Example::

        async with AsyncRollouts("runs/demo", AsyncConfig(max_off_policy_steps=1)) as ro:
            await ro.submit_groups(tasks, rollout_step=0, num_samples=8)
            async for group in ro.groups(until_idle=True):    # also ends when the coordinator shuts down
                samples = group_samples(group)                # tokens, loss_mask, rollout_logprobs, reward
                loss = grpo_loss(samples, group.rewards)
                await ro.update_policy(save_checkpoint(), version=ro.policy_version + 1)

    A group is yielded once all its samples are back (or its task ended with some that never will); stale
    groups (older than ``max_off_policy_steps`` policy versions) and groups with too few completed samples are
    dropped and counted in ``stats``. The module docstring maps ``TrainSample`` to slime's ``Sample``.
    """

    def __init__(self, run_dir: str | Path, config: AsyncConfig | None = None, *, policy_version: int = 0,
                 client: RunClient | None = None, timeout_s: float = 30.0) -> None:
        self.run_dir = Path(run_dir)
        self.config = config or AsyncConfig.from_run(self.run_dir)
        self.policy_version = policy_version
        self.client = client or RunClient(self.run_dir, timeout_s=timeout_s)
        self.stats = AsyncStats()
        self._open: dict[str, Group] = {}

    async def __aenter__(self) -> AsyncRollouts:
        await self.client.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.close()

    @property
    def pending(self) -> int:
        """Groups submitted and not yet yielded or dropped."""
        return len(self._open)

    def tag(self, task: Task, *, rollout_step: int, num_samples: int | None = None, suffix: str = "") -> Task:
        """``task`` as a group (``GroupTag.new``: id ``{task_id}@step{rollout_step}{suffix}``) under the current
        policy version."""
        group = GroupTag.new(task.task_id, rollout_step, self.policy_version, suffix=suffix)
        return msgspec.structs.replace(task, task_id=group.group_id, num_samples=num_samples or task.num_samples,
                                       group=group)

    async def submit_groups(self, tasks: Iterable[Task], *, rollout_step: int,
                            num_samples: int | None = None, suffix: str = "") -> list[str]:
        """Submit one group per task (tagged with the current policy version); returns the group ids
        (``{task_id}@step{rollout_step}{suffix}``: a ``suffix`` tells apart groups of one task in one step)."""
        tagged = [self.tag(t, rollout_step=rollout_step, num_samples=num_samples, suffix=suffix) for t in tasks]
        reply = await self.client.submit(tagged)
        if reply.rejected:
            raise ValueError("coordinator rejected groups: " + "; ".join(f"{k}: {v}" for k, v in
                                                                         reply.rejected.items()))
        now = time.monotonic()
        for t in tagged:
            assert t.group is not None
            self._open[t.task_id] = Group.of(t.group, num_samples=t.num_samples, submitted_at=now)
        self.stats.submitted += len(tagged)
        return [t.task_id for t in tagged]

    async def submit_group(self, task: Task, *, rollout_step: int, num_samples: int | None = None) -> str:
        """``submit_groups`` for one task; returns its group id."""
        return (await self.submit_groups([task], rollout_step=rollout_step, num_samples=num_samples))[0]

    def is_open(self, group_id: str) -> bool:
        """Whether ``group_id`` was submitted and is neither yielded nor dropped yet."""
        return group_id in self._open

    def accept(self, result: SessionResult) -> Group | None:
        """Add one result; the group when it is complete and usable (else None: waiting, stale or rejected)."""
        gid = result.group.group_id if result.group is not None else result.task_id
        group = self._open.get(gid)
        if group is None:
            log.debug("result %s belongs to no open group (not ours, or already handled)", result.key)
            return None
        group.results.append(result)
        return self._close_if_complete(group)

    def _close_if_complete(self, group: Group) -> Group | None:
        gid = group.group_id
        if len(group.results) + group.failed < group.num_samples:
            return None
        del self._open[gid]
        group.finished_at = time.monotonic()
        if self.policy_version - group.policy_version > self.config.max_off_policy_steps:
            self.stats.stale += 1
            log.info("dropped stale group %s (policy %d, now %d)", gid, group.policy_version, self.policy_version)
            return None
        if group.completed_fraction < self.config.min_group_fraction:
            self.stats.incomplete += 1
            log.info("rejected group %s: %.0f%% of samples completed", gid, 100 * group.completed_fraction)
            return None
        self.stats.yielded += 1
        return group

    async def check_finished(self) -> list[Group]:
        """Close open groups whose task is over (every session terminal) although some samples never sent a
        result (ERROR, CANCELLED); returns those that are usable (same rules as ``accept``)."""
        out = []
        for gid, group in list(self._open.items()):
            st = await self.client.task_status(gid)
            if not st.found or st.state not in ("completed", "cancelled"):
                continue
            group.failed = sum(1 for s in st.sessions if s.state in (SessionState.ERROR, SessionState.CANCELLED))
            if group.failed:
                log.info("group %s: %d of %d samples ended without a result", gid, group.failed, group.num_samples)
            closed = self._close_if_complete(group)
            if closed is not None:
                out.append(closed)
        return out

    async def groups(self, *, until_idle: bool = False, check_s: float = 10.0) -> AsyncIterator[Group]:
        """Complete, fresh, sufficiently completed groups as they finish. Runs until the caller stops, or with
        ``until_idle`` until no submitted group is pending (stale and rejected ones count as handled). After
        ``check_s`` without a result, open groups are checked for tasks that ended with failed samples."""
        if until_idle and not self._open:
            return
        queue: asyncio.Queue[SessionResult] = asyncio.Queue()
        pump = asyncio.create_task(self._pump(queue))
        get: asyncio.Future[SessionResult] | None = None
        try:
            while True:
                get = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({get, pump}, timeout=check_s, return_when=asyncio.FIRST_COMPLETED)
                if get in done:
                    ready = [g for g in [self.accept(get.result())] if g is not None]
                else:
                    get.cancel()
                    if pump in done:
                        pump.result()  # the stream ended: raise its error
                        return
                    ready = await self.check_finished()
                for group in ready:
                    yield group
                if until_idle and not self._open:
                    return
        finally:
            if get is not None:
                get.cancel()
            pump.cancel()
            await asyncio.gather(pump, *([get] if get is not None else []), return_exceptions=True)

    async def _pump(self, queue: asyncio.Queue[SessionResult]) -> None:
        async for result in self.client.results():
            queue.put_nowait(result)

    async def update_policy(self, checkpoint_dir: str | Path, version: int, *, pause: bool = True) -> None:
        """Pause every inference server, load ``checkpoint_dir`` as weight version ``version``, continue; a server
        restarting meanwhile gets it too (``policy_push``).

        Groups submitted afterwards carry ``version``; groups older than ``max_off_policy_steps`` are dropped.
        ``pause=False`` (in-flight updates): no pause; each engine loads once the calls it is running have
        finished, holding new ones meanwhile (SGLang's and the reference server's rule), so every call is sampled by
        one version and the sessions in flight go on under the new one.
        """
        from polar_hpc.train.policy_push import push_policy
        from polar_hpc.wire.security import run_api_key

        t0 = time.monotonic()
        await push_policy(self.run_dir, PolicyRecord(path=str(checkpoint_dir), version=engine_name(version)),
                          pause_mode=self.config.pause_mode if pause else None,
                          restart_wait_s=self.client.restart_wait_s, api_key=run_api_key(self.run_dir))
        self.policy_version = version
        self.stats.weight_updates += 1
        self.stats.update_seconds += time.monotonic() - t0
        log.info("policy version %d loaded from %s in %.2fs", version, checkpoint_dir, time.monotonic() - t0)
