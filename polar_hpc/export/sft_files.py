"""Files of one SFT export variant: ``datasets`` features, sharded by size, with ``datasets``' own writers.

Per split, files ``{split}-{i:05d}-of-{n:05d}.{jsonl|parquet}`` of at most ``max_shard_bytes`` each (a row is
never split), named the way the Hugging Face Hub names data files. Parquet goes through
``datasets.arrow_writer.ParquetWriter`` (the features travel in the file's metadata, so ``load_dataset("parquet")``
gives back ``Json`` messages); the ``hf`` format writes Arrow the same way and ends with
``DatasetDict.save_to_disk(max_shard_size=...)``. A split with no rows gets no file at all.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec
import numpy as np

Format = Literal["jsonl", "parquet", "hf"]
Variant = Literal["chat", "tokens"]
SPLITS = ("train", "test")
VARIANTS: tuple[Variant, ...] = ("chat", "tokens")
DEFAULT_SHARD_BYTES = 256 << 20
BATCH_ROWS = 256
EXTENSIONS: dict[Format, str] = {"jsonl": "jsonl", "parquet": "parquet", "hf": "arrow"}

COMMON = (("key", "string"), ("trace_index", "int32"), ("task_id", "string"), ("repo", "string"),
          ("harness", "string"), ("reward", "float64"), ("session_reward", "float64"), ("policy_version", "int64"),
          ("policy", "string"))
TOKEN_LISTS = (("input_ids", "int32"), ("loss_mask", "uint8"), ("logprobs", "float32"))


def features(variant: Variant) -> Any:
    """The ``datasets.Features`` of a variant (chat: ``messages``/``tools`` as lists of ``Json``)."""
    from datasets import Features, Json, List, Value

    cols: dict[str, Any] = {}
    if variant == "chat":
        cols = {"messages": List(Json()), "tools": List(Json())}
    else:
        cols = {name: List(Value(dt)) for name, dt in TOKEN_LISTS} | {"prompt_length": Value("int32")}
    return Features(cols | {name: Value(dt) for name, dt in COMMON})


def shard_name(split: str, i: int, n: int, fmt: Format) -> str:
    return f"{split}-{i:05d}-of-{n:05d}.{EXTENSIONS[fmt]}"


class SplitFiles:
    """Rows of one variant and split into size-bounded files under ``folder``; ``close()`` names them."""

    def __init__(self, folder: Path, split: str, variant: Variant, fmt: Format, max_shard_bytes: int) -> None:
        self.folder, self.split, self.variant, self.fmt = folder, split, variant, fmt
        self.max_bytes = max(1, max_shard_bytes)
        self.features = features(variant)
        self.rows = 0
        self._parts: list[Path] = []
        self._writer: Any = None
        self._file: Any = None
        self._bytes = 0
        self._pending: list[dict[str, Any]] = []
        self._pending_bytes = 0
        self._enc = msgspec.json.Encoder()

    def add(self, row: dict[str, Any]) -> None:
        """One row; chat ``messages``/``tools`` are lists of dicts, token columns numpy arrays."""
        if self.fmt == "jsonl":
            line = self._enc.encode(_jsonl_row(row)) + b"\n"
            size = len(line)
            self._pending.append({"line": line})
        else:
            if self.variant == "chat":
                row = row | {"messages": [self._enc.encode(m).decode() for m in row["messages"]],
                             "tools": [self._enc.encode(t).decode() for t in row["tools"]] if row.get("tools")
                             else None}
                size = sum(map(len, row["messages"])) + sum(map(len, row["tools"] or ()))
            else:
                size = sum(row[name].nbytes for name, _ in TOKEN_LISTS)
            self._pending.append(row)
        self._pending_bytes += size
        if len(self._pending) >= BATCH_ROWS or self._bytes + self._pending_bytes >= self.max_bytes:
            self._flush()

    def _open(self) -> None:
        path = self.folder / f".{self.split}-{len(self._parts):05d}.part"
        self._parts.append(path)
        self._bytes = 0
        if self.fmt == "jsonl":
            self._file = open(path, "wb")
            return
        from datasets.arrow_writer import ArrowWriter, ParquetWriter

        cls = ParquetWriter if self.fmt == "parquet" else ArrowWriter
        self._writer = cls(features=self.features, path=str(path))

    def _finish_part(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._writer is not None:
            self._writer.finalize()
            self._writer = None

    def _flush(self) -> None:
        rows, self._pending = self._pending, []
        size, self._pending_bytes = self._pending_bytes, 0
        if not rows:
            return
        if self._file is None and self._writer is None:
            self._open()
        if self.fmt == "jsonl":
            self._file.write(b"".join(r["line"] for r in rows))
        else:
            self._writer.write_table(self._table(rows))
        self.rows += len(rows)
        self._bytes += size
        if self._bytes >= self.max_bytes:
            self._finish_part()

    def _table(self, rows: Sequence[dict[str, Any]]) -> Any:
        import pyarrow as pa

        schema = self.features.arrow_schema
        cols: dict[str, Any] = {}
        if self.variant == "chat":
            cols["messages"] = _json_lists(pa, [r["messages"] for r in rows])
            cols["tools"] = _json_lists(pa, [r["tools"] for r in rows])
        else:
            for name, dt in TOKEN_LISTS:
                cols[name] = _num_lists(pa, [r[name] for r in rows], dt)
            cols["prompt_length"] = pa.array([r["prompt_length"] for r in rows], pa.int32())
        for name, _ in COMMON:
            cols[name] = pa.array([r[name] for r in rows], schema.field(name).type)
        return pa.table(cols, schema=schema)

    def close(self) -> list[Path]:
        """Finish the files; returns their final paths (none when the split is empty)."""
        self._flush()
        self._finish_part()
        n = len(self._parts)
        final = []
        for i, part in enumerate(self._parts):
            dest = self.folder / shard_name(self.split, i, n, self.fmt)
            os.replace(part, dest)
            final.append(dest)
        return final


def _jsonl_row(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in row.items()}
    if out.get("tools") is None:
        out.pop("tools", None)
    return out


def _json_lists(pa: Any, lists: Sequence[list[str] | None]) -> Any:
    """Rows of JSON texts -> ``list<json>`` (a missing or empty list is null)."""
    off = np.zeros(len(lists) + 1, dtype=np.int32)
    flat: list[str] = []
    for i, items in enumerate(lists):
        if items:
            flat += items
        off[i + 1] = len(flat)
    mask = pa.array([not items for items in lists])
    return pa.ListArray.from_arrays(pa.array(off), pa.array(flat, type=pa.json_()), mask=mask)


def _num_lists(pa: Any, parts: Sequence[np.ndarray], dtype: str) -> Any:
    off = np.zeros(len(parts) + 1, dtype=np.int32)
    np.cumsum([p.shape[0] for p in parts], out=off[1:])
    values = np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)
    return pa.ListArray.from_arrays(pa.array(off), pa.array(values))


def save_hf(folder: Path, files: dict[str, list[Path]], max_shard_bytes: int) -> None:
    """Arrow shards per split -> ``DatasetDict.save_to_disk(folder)``; the shards are removed after."""
    import datasets
    from datasets.utils import logging as ds_logging

    bars = ds_logging.is_progress_bar_enabled()
    ds_logging.disable_progress_bar()  # no progress bars on the export's output
    try:
        _save_hf(datasets, folder, files, max_shard_bytes)
    finally:
        if bars:
            ds_logging.enable_progress_bar()


def _save_hf(datasets: Any, folder: Path, files: dict[str, list[Path]], max_shard_bytes: int) -> None:
    dd = datasets.DatasetDict({
        split: datasets.concatenate_datasets([datasets.Dataset.from_file(str(p)) for p in paths])
        for split, paths in files.items() if paths
    })
    tmp = folder.with_name(folder.name + ".hf-tmp")
    dd.save_to_disk(str(tmp), max_shard_size=max_shard_bytes)
    del dd
    shutil.rmtree(folder)
    os.replace(tmp, folder)
