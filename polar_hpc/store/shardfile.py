"""Opening one committed shard and reading its tables whole (the reader, resume index and tools share this)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import h5py
import msgspec
import numpy as np

from polar_hpc.store.encode import text_items
from polar_hpc.store.schema import SHARD_SUFFIX, TMP_SUFFIX, check_attributes, check_offsets, check_structure


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
    policy: list[str]
    """``traces/policy`` (schema 2); every trace ``sample`` in a version-1 shard."""


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


class Shard:
    """An open shard: cached low-level dataset handles and whole-dataset reads.

    h5py's high-level objects cost tens of microseconds per lookup; a shard has ~35 datasets and a run
    may have thousands of shards, so the reader goes through ``h5py.h5d`` directly.
    """

    def __init__(self, f: h5py.File, path: Path) -> None:
        self.file = f
        self.path = path
        self._ids: dict[str, Any] = {}

    @property
    def attrs(self) -> Any:
        return self.file.attrs

    def names(self) -> set[str]:
        out: set[str] = set()
        for group in ("tokens", "traces", "sessions"):
            g = self.file.get(group)
            if isinstance(g, h5py.Group):
                out.update(f"{group}/{k}" for k in g)
        return out

    def dsid(self, name: str) -> Any:
        d = self._ids.get(name)
        if d is None:
            d = self._ids[name] = h5py.h5d.open(self.file.id, name.encode())
        return d

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.dsid(name).shape)

    def dtype(self, name: str) -> np.dtype[Any]:
        dtype: np.dtype[Any] = np.dtype(self.dsid(name).dtype)
        return dtype

    def read(self, name: str) -> np.ndarray:
        d = self.dsid(name)
        out = np.empty(d.shape, dtype=d.dtype)
        if out.size:
            d.read(h5py.h5s.ALL, h5py.h5s.ALL, out)
        return out

    def text(self, name: str) -> list[str]:
        return text_items(self.read(name), self.read(f"{name}_offsets"))


def _open(path: Path) -> h5py.File:
    try:
        return h5py.File(path, "r", locking=False)
    except (OSError, ValueError) as err:
        raise ShardError(f"{path}: cannot open as HDF5 (torn or truncated?): {err}") from None


@contextmanager
def open_shard(path: Path, *, check: bool = True) -> Iterator[Shard]:
    """Open a shard read-only and check its structure; raises ShardError naming the file and the fault.

    ``check=False`` skips the structure check (for a shard already checked: committed shards never change).
    """
    f = _open(path)
    try:
        shard = Shard(f, path)
        try:
            problems = check_structure(shard) if check else []
        except (OSError, KeyError, ValueError, TypeError) as err:
            raise ShardError(f"{path}: unreadable structure: {err}") from None
        if problems:
            raise ShardError(f"{path}: " + "; ".join(problems))
        yield shard
    finally:
        f.close()


def read_keys(path: Path) -> list[str]:
    """Session keys of one shard with the checks resume needs (schema, key column sound), nothing more.

    Raises ShardError naming the file.
    """
    f = _open(path)
    try:
        shard = Shard(f, path)
        problems = check_attributes(shard)
        if not problems:
            data, off = shard.read("sessions/key"), shard.read("sessions/key_offsets")
            problems = check_offsets("sessions/key_offsets", off, data.shape[0])
            if not problems and off.shape[0] != int(f.attrs["sessions"]) + 1:
                problems = [
                    f"sessions/key holds {off.shape[0] - 1} keys, attribute sessions says {f.attrs['sessions']}"
                ]
        if problems:
            raise ShardError(f"{path}: " + "; ".join(problems))
        return text_items(data, off)
    except (OSError, KeyError, ValueError, TypeError) as err:
        raise ShardError(f"{path}: unreadable session keys: {err}") from None
    finally:
        f.close()


def read_sessions(f: Shard) -> SessionTable:
    return SessionTable(
        keys=f.text("sessions/key"),
        task_ids=f.text("sessions/task_id"),
        sample_index=f.read("sessions/sample_index"),
        attempt=f.read("sessions/attempt"),
        status=f.read("sessions/status"),
        reward=f.read("sessions/reward"),
        duration_s=f.read("sessions/duration_s"),
        harness=f.text("sessions/harness"),
        model=f.text("sessions/model"),
        policy_version=f.read("sessions/policy_version"),
        gateway_rank=f.read("sessions/gateway_rank"),
        trace_offsets=f.read("sessions/trace_offsets"),
    )


def read_traces(f: Shard, *, blobs: bool = True) -> TraceTable:
    """``blobs=False`` leaves the blob column (messages, tools, metadata) unread and empty."""
    return TraceTable(
        prompt_offsets=f.read("traces/prompt_offsets"),
        response_offsets=f.read("traces/response_offsets"),
        session=f.read("traces/session"),
        reward=f.read("traces/reward"),
        finish_reason=f.text("traces/finish_reason"),
        blob=f.read("traces/blob") if blobs else np.zeros(0, dtype=np.uint8),
        blob_offsets=f.read("traces/blob_offsets") if blobs else np.zeros(1, dtype=np.int64),
        policy=read_policies(f),
    )


def read_policies(f: Shard) -> list[str]:
    """``traces/policy``; a version-1 shard has no such column and only sampled traces."""
    if "traces/policy" in f.names():
        return f.text("traces/policy")
    return ["sample"] * f.shape("traces/session")[0]


def read_tokens(f: Shard) -> Tokens:
    return Tokens(
        prompt_ids=f.read("tokens/prompt_ids"),
        response_ids=f.read("tokens/response_ids"),
        loss_mask=f.read("tokens/loss_mask"),
        response_logprobs=f.read("tokens/response_logprobs"),
    )
