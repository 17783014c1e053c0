"""Opening one committed shard and reading its tables whole (the reader, resume index and tools share this)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import h5py
import msgspec
import numpy as np

from polar_hpc.store.encode import text_items
from polar_hpc.store.schema import SHARD_SUFFIX, TMP_SUFFIX, check_structure


class ShardError(Exception):
    """A shard that cannot be used: torn, truncated, not a shard, wrong schema. The message names the file."""


class SessionTable(msgspec.Struct, kw_only=True):
    """The per-session columns of one shard (no token data)."""

    keys: list[str]
    task_ids: list[str]
    sample_index: np.ndarray
    attempt: np.ndarray
    status: np.ndarray
    reward: np.ndarray
    duration_s: np.ndarray
    harness: list[str]
    model: list[str]
    policy_version: np.ndarray
    gateway_rank: np.ndarray
    trace_offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)


class TraceTable(msgspec.Struct, kw_only=True):
    prompt_offsets: np.ndarray
    response_offsets: np.ndarray
    session: np.ndarray
    reward: np.ndarray
    finish_reason: list[str]
    blob: np.ndarray
    blob_offsets: np.ndarray


class Tokens(msgspec.Struct, kw_only=True):
    prompt_ids: np.ndarray
    response_ids: np.ndarray
    loss_mask: np.ndarray
    response_logprobs: np.ndarray


def resolve_shards(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> tuple[list[Path], list[str]]:
    """Committed shard files under ``paths`` (files, shard dirs, or run dirs holding ``shards/``), in read order.

    Order: arguments in the order given; inside a directory, by file name (rank, then seq), which is
    deterministic and follows commit order within a rank. Returns (files, problems).
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    files: list[Path] = []
    problems: list[str] = []
    seen: set[Path] = set()
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            d = p / "shards" if (p / "shards").is_dir() else p
            found = sorted(d.glob(f"*{SHARD_SUFFIX}"), key=lambda x: x.name)
        elif p.is_file():
            if p.name.endswith(TMP_SUFFIX) or not p.name.endswith(SHARD_SUFFIX):
                problems.append(f"{p}: not a committed shard (expected a *{SHARD_SUFFIX} file)")
                continue
            found = [p]
        else:
            problems.append(f"{p}: no such file or directory")
            continue
        for f in found:
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                files.append(f)
    return files, problems


@contextmanager
def open_shard(path: Path) -> Iterator[h5py.File]:
    """Open a shard read-only and check its structure; raises ShardError naming the file and the fault."""
    try:
        f = h5py.File(path, "r", locking=False)
    except (OSError, ValueError) as err:
        raise ShardError(f"{path}: cannot open as HDF5 (torn or truncated?): {err}") from None
    try:
        try:
            problems = check_structure(f)
        except (OSError, KeyError, ValueError, TypeError) as err:
            raise ShardError(f"{path}: unreadable structure: {err}") from None
        if problems:
            raise ShardError(f"{path}: " + "; ".join(problems))
        yield f
    finally:
        f.close()


def _text(f: h5py.File, name: str) -> list[str]:
    return text_items(f[name][()], f[f"{name}_offsets"][()])


def read_keys(f: h5py.File) -> list[str]:
    return _text(f, "sessions/key")


def read_sessions(f: h5py.File) -> SessionTable:
    g = f["sessions"]
    return SessionTable(
        keys=_text(f, "sessions/key"),
        task_ids=_text(f, "sessions/task_id"),
        sample_index=g["sample_index"][()],
        attempt=g["attempt"][()],
        status=g["status"][()],
        reward=g["reward"][()],
        duration_s=g["duration_s"][()],
        harness=_text(f, "sessions/harness"),
        model=_text(f, "sessions/model"),
        policy_version=g["policy_version"][()],
        gateway_rank=g["gateway_rank"][()],
        trace_offsets=g["trace_offsets"][()],
    )


def read_traces(f: h5py.File) -> TraceTable:
    g = f["traces"]
    return TraceTable(
        prompt_offsets=g["prompt_offsets"][()],
        response_offsets=g["response_offsets"][()],
        session=g["session"][()],
        reward=g["reward"][()],
        finish_reason=_text(f, "traces/finish_reason"),
        blob=g["blob"][()],
        blob_offsets=g["blob_offsets"][()],
    )


def _read_whole(ds: h5py.Dataset) -> np.ndarray:
    out = np.empty(ds.shape, dtype=ds.dtype)
    if out.size:
        ds.read_direct(out)
    return out


def read_tokens(f: h5py.File) -> Tokens:
    g = f["tokens"]
    return Tokens(
        prompt_ids=_read_whole(g["prompt_ids"]),
        response_ids=_read_whole(g["response_ids"]),
        loss_mask=_read_whole(g["loss_mask"]),
        response_logprobs=_read_whole(g["response_logprobs"]),
    )
