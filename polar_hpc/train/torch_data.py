"""torch ``IterableDataset`` over ``TraceReader`` batches (import only where torch is installed).

Each item is one packed batch as a dict of tensors (``input_ids``, ``loss_mask``, ``logprobs``,
``position_ids``, ``segment_ids``, ``cu_seqlens``, ``rewards``); use ``DataLoader(ds, batch_size=None)``.
With several DataLoader workers, worker w takes batches w, w+W, ...; exact resume (``ds.cursor``) holds for
``num_workers`` 0, where the dataset's cursor is the one after the last batch handed out.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import IterableDataset, get_worker_info

from polar_hpc.train.reader import Batch, Cursor, TraceReader

_TENSORS = ("input_ids", "loss_mask", "logprobs", "position_ids", "segment_ids", "cu_seqlens", "rewards")


def batch_to_tensors(batch: Batch) -> dict[str, torch.Tensor]:
    out = {name: torch.from_numpy(getattr(batch, name)) for name in _TENSORS}
    out["loss_mask"] = out["loss_mask"].to(torch.bool)
    out["input_ids"] = out["input_ids"].to(torch.long)
    out["position_ids"] = out["position_ids"].to(torch.long)
    return out


class PackedTraceDataset(IterableDataset[dict[str, torch.Tensor]]):
    def __init__(self, reader: TraceReader, *, cursor: Cursor | None = None, epochs: int | None = 1) -> None:
        self.reader = reader
        self.cursor = cursor or reader.start()
        self.epochs = epochs

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        for n, batch in enumerate(self.reader.batches(self.cursor, epochs=self.epochs)):
            if n % workers == worker:
                if info is None:
                    self.cursor = batch.cursor
                yield batch_to_tensors(batch)
