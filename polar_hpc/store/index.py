"""Trace index over the committed shards of one or more runs: selection, dedup, lengths, no token data.

Each run gets its own ``ShardReader`` (session keys are deduped within a run: two runs may reuse task ids);
``dedup="content"`` additionally drops traces whose prompt ‖ response ids equal an earlier trace's, across runs.
The index is a struct of arrays, one row per kept trace, in read order (run, shard, trace).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec
import numpy as np

from polar_hpc.log import get_logger
from polar_hpc.store.encode import decode_session_blob
from polar_hpc.store.reader import ShardReader, require_shards
from polar_hpc.store.repo import repo_of
from polar_hpc.store.select import TraceSelect
from polar_hpc.store.shardfile import (
    ShardError,
    open_shard,
    read_offsets,
    read_policies,
    read_session_blobs,
    read_tokens,
    read_trace_rewards,
    read_trainable,
)

log = get_logger("train")

Dedup = Literal["session", "content"]
RunPath = str | os.PathLike[str]


class TraceIndex(msgspec.Struct, kw_only=True):
    runs: list[str]
    shards: list[str]
    """Shard paths; ``shard`` indexes this list."""
    shard: np.ndarray
    trace: np.ndarray
    """Row in the shard's trace table."""
    prompt_start: np.ndarray
    prompt_len: np.ndarray
    response_start: np.ndarray
    response_len: np.ndarray
    run: np.ndarray
    trace_in_session: np.ndarray
    status: np.ndarray
    session_reward: np.ndarray
    reward: np.ndarray
    policy_version: np.ndarray
    key: list[str]
    task_id: list[str]
    repo: list[str]
    harness: list[str]
    session_duplicates: int = 0
    content_duplicates: int = 0
    problems: list[str] = msgspec.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.key)

    @property
    def num_tokens(self) -> np.ndarray:
        total: np.ndarray = self.prompt_len + self.response_len
        return total

    def sessions_per_run(self) -> dict[str, int]:
        """Sessions with a trace in the index, per run (as given, every run listed, in order)."""
        keys = {(r, k) for r, k in zip(self.run.tolist(), self.key, strict=True)}
        out = dict.fromkeys(self.runs, 0)
        for r, _ in keys:
            out[self.runs[r]] += 1
        return out

    def fingerprint(self) -> str:
        """Identifies the selection (shard names and trace rows), not where the runs live."""
        h = hashlib.blake2b(digest_size=8)
        for i, s in enumerate(self.shards):
            h.update(f"{i}:{Path(s).name};".encode())
        for a in (self.shard, self.trace, self.run):
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()


def content_hash(prompt: np.ndarray, response: np.ndarray) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    h.update(np.int64(prompt.shape[0]).tobytes())
    h.update(prompt.tobytes())
    h.update(response.tobytes())
    return h.digest()


class _Acc:
    def __init__(self) -> None:
        self.cols: dict[str, list[Any]] = {n: [] for n in _ARRAYS} | {n: [] for n in _LISTS}

    def add(self, **kw: Any) -> None:
        for k, v in kw.items():
            self.cols[k].append(v)


_ARRAYS = {
    "shard": np.int32, "trace": np.int64, "prompt_start": np.int64, "prompt_len": np.int64,
    "response_start": np.int64, "response_len": np.int64, "run": np.int32, "trace_in_session": np.int32,
    "status": np.uint8, "session_reward": np.float64, "reward": np.float64, "policy_version": np.int64,
}
_LISTS = ("key", "task_id", "repo", "harness")


def build_index(
    runs: RunPath | Sequence[RunPath],
    select: TraceSelect | None = None,
    *,
    dedup: Dedup = "content",
    with_repo: bool = False,
    must_exist: bool = True,
) -> TraceIndex:
    """Index the selected traces of ``runs`` (run dirs, shard dirs or shard files; one entry per run).

    ``with_repo`` decodes session metadata to fill ``repo`` from ``metadata["repo"]`` (otherwise the repo is
    derived from the task id unless the selection needs the metadata anyway). ``must_exist``: a run path that
    does not exist, or runs without any committed shard, raise ``MissingShards``.
    """
    run_list = [runs] if isinstance(runs, (str, os.PathLike)) else list(runs)
    if must_exist:
        require_shards(run_list)
    select = select or TraceSelect()
    need_meta = with_repo or select.needs_session_blobs
    acc = _Acc()
    shards: list[str] = []
    problems: list[str] = []
    seen: set[bytes] = set()
    session_dups = content_dups = 0
    for run_i, run in enumerate(run_list):
        reader = ShardReader(run)
        for path, table, first in reader.session_tables():
            rows = np.flatnonzero(first & select.sessions(table))
            if not rows.size:
                continue
            try:
                with open_shard(path, check=False) as f:
                    po, ro = read_offsets(f)
                    treward = read_trace_rewards(f)
                    sblobs = read_session_blobs(f) if need_meta else None
                    trainable = read_trainable(f) if select.trainable_only else None
                    tok = read_tokens(f) if dedup == "content" else None
                    tpolicy = read_policies(f) if select.policies is not None else None
                    by_trace = select.selects_traces
            except (ShardError, OSError, KeyError, ValueError) as err:
                problems.append(f"{path}: unreadable trace data: {err}")
                continue
            shard_i = len(shards)
            shards.append(str(path))
            to = table.trace_offsets.tolist()
            for row in rows.tolist():
                meta = decode_session_blob(sblobs[row]).metadata if sblobs is not None else None
                repo = repo_of(table.task_ids[row], meta)
                if not select.session_metadata(meta, repo):
                    continue
                for j, ti in enumerate(range(to[row], to[row + 1])):
                    if by_trace and not select.trace(trainable is None or bool(trainable[ti]),
                                                     tpolicy[ti] if tpolicy is not None else "sample"):
                        continue
                    a, b, c, d = int(po[ti]), int(po[ti + 1]), int(ro[ti]), int(ro[ti + 1])
                    if tok is not None:
                        h = content_hash(tok.prompt_ids[a:b], tok.response_ids[c:d])
                        if h in seen:
                            content_dups += 1
                            continue
                        seen.add(h)
                    acc.add(shard=shard_i, trace=ti, prompt_start=a, prompt_len=b - a, response_start=c,
                            response_len=d - c, run=run_i, trace_in_session=j, status=int(table.status[row]),
                            session_reward=float(table.reward[row]), reward=float(treward[ti]),
                            policy_version=int(table.policy_version[row]), key=table.keys[row],
                            task_id=table.task_ids[row], repo=repo, harness=table.harness[row])
        session_dups += len(reader.duplicates)
        problems += reader.problems
    if content_dups:
        log.info("dropped %d traces whose tokens repeat an earlier trace", content_dups)
    cols: dict[str, Any] = {k: np.asarray(acc.cols[k], dtype=dt) for k, dt in _ARRAYS.items()}
    cols.update((k, acc.cols[k]) for k in _LISTS)
    return TraceIndex(runs=[str(r) for r in run_list], shards=shards, session_duplicates=session_dups,
                      content_duplicates=content_dups, problems=problems, **cols)


def rl_select(select: TraceSelect | None, include_oracle: bool) -> TraceSelect:
    """An RL reader's selection: oracle traces (forced tokens, not the behaviour policy's) left out unless asked
    or unless ``select.policies`` says otherwise."""
    select = select or TraceSelect()
    if include_oracle or select.policies is not None:
        return select
    return msgspec.structs.replace(select, policies=("sample",))
