"""torch ``IterableDataset`` over ``TraceReader`` batches (import only where torch is installed).

Each item is one packed batch as a dict of tensors (``input_ids``, ``loss_mask``, ``logprobs``, ``position_ids``,
``segment_ids``, ``cu_seqlens``, ``rewards``) plus ``cursor`` (JSON text of the reader ``Cursor`` after it); use
``DataLoader(ds, batch_size=None)``. Every epoch's trace order is split into ``world_size x num_workers`` disjoint
parts, one per (DDP rank, DataLoader worker): each trace is read once per epoch, by one worker of one rank, and
no worker reads another's token data. Parts hold the same number of traces (±1) but may pack into different
numbers of batches.

Resume: keep the latest cursor of every part with the checkpoint and pass them back::

    saved: dict[int, str] = checkpoint.get("cursors", {})       # part -> cursor JSON
    ds = PackedTraceDataset(reader, rank=rank, world_size=world, epochs=3, cursors=saved.values())
    for item in DataLoader(ds, batch_size=None, num_workers=2):
        step(item)
        saved[part_of(item["cursor"])] = item["cursor"]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgspec
import torch
from torch.utils.data import IterableDataset, get_worker_info

from polar_hpc.train.reader import Batch, Cursor, CursorMismatch, TraceReader

_TENSORS = ("input_ids", "loss_mask", "logprobs", "position_ids", "segment_ids", "cu_seqlens", "rewards")


def batch_to_tensors(batch: Batch) -> dict[str, Any]:
    out: dict[str, Any] = {name: torch.from_numpy(getattr(batch, name)) for name in _TENSORS}
    out["loss_mask"] = out["loss_mask"].to(torch.bool)
    out["input_ids"] = out["input_ids"].to(torch.long)
    out["position_ids"] = out["position_ids"].to(torch.long)
    out["cursor"] = msgspec.json.encode(batch.cursor).decode()
    return out


def part_of(cursor: str | Cursor) -> int:
    """The part (``rank * num_workers + worker``) a saved cursor belongs to."""
    c = msgspec.json.decode(cursor, type=Cursor) if isinstance(cursor, str) else cursor
    return c.shard


def _default_rank() -> tuple[int, int]:
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class PackedTraceDataset(IterableDataset[dict[str, Any]]):
    """Packed batches of a ``TraceReader`` for one DDP rank, split across DataLoader workers (module doc).

    ``rank``/``world_size`` default to ``torch.distributed``'s when it is initialized, else 0 / 1. ``cursors``:
    the cursors saved from this rank's items (any order; JSON text or ``Cursor``); parts without one start at
    the beginning (``cursor``: one of them, the single-process form). In the main process (``num_workers=0``)
    ``ds.cursors`` follows the items handed out.
    """

    def __init__(self, reader: TraceReader, *, rank: int | None = None, world_size: int | None = None,
                 cursors: Iterable[str | Cursor] | None = None, cursor: Cursor | None = None,
                 epochs: int | None = 1) -> None:
        default_rank, default_world = _default_rank()
        self.reader = reader
        self.rank = default_rank if rank is None else rank
        self.world_size = default_world if world_size is None else world_size
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank must be in 0..{self.world_size - 1}, got {self.rank}")
        self.epochs = epochs
        self.cursors: dict[int, Cursor] = {}
        for c in [*(cursors or ()), *([cursor] if cursor is not None else [])]:
            cur = msgspec.json.decode(c, type=Cursor) if isinstance(c, str) else c
            self.cursors[cur.shard] = cur

    @property
    def cursor(self) -> Cursor:
        """Single process, one part: the cursor after the last item handed out (``cursor=`` resumes it)."""
        return self.cursors.get(0) or self.reader.start()

    def _cursor(self, shard: int, shards: int) -> Cursor:
        cur = self.cursors.get(shard)
        if cur is None:
            return self.reader.start(shard, shards)
        if cur.shards != shards:
            raise CursorMismatch(f"cursor of part {shard} was saved with {cur.shards} parts (world size x "
                                 f"workers); this loader has {shards}: resume with the same world size and "
                                 "num_workers")
        return cur

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        shards = self.world_size * workers
        shard = self.rank * workers + worker
        for batch in self.reader.batches(self._cursor(shard, shards), epochs=self.epochs):
            if info is None:
                self.cursors[shard] = batch.cursor
            yield batch_to_tensors(batch)
