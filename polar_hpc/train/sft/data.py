"""The SFT corpus as the trainer takes it: token rows of the export's ``tokens`` variant, checked before training.

A source is an SFT export (a folder with ``manifest.json`` and ``tokens/``; its ``train`` split is read) or run /
shard dirs, whose accepted sessions (completed, reward >= ``min_reward``, trainable traces) are exported first
(``polar_hpc.export.sft``, all tasks in ``train``). Each row keeps the exact ids the harness's requests rendered to
(prompt ‖ response) and the export's ``loss_mask``; nothing is re-templated. ``to_dataset`` gives TRL's
pre-tokenized form: ``input_ids`` and ``assistant_masks`` (= ``loss_mask``), from which ``SFTTrainer`` builds
``labels`` (-100 wherever the mask is 0).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from polar_hpc.config.run import ACCEPT_REWARD
from polar_hpc.errors import PolarError
from polar_hpc.export.manifest import ExportManifest
from polar_hpc.log import get_logger
from polar_hpc.store.reader import EmptySelection
from polar_hpc.store.select import TraceSelect
from polar_hpc.wire.traces import TraceStatus

log = get_logger("train")
SPLIT = "train"
"""The export split SFT trains on (an export's ``test`` split is left for evaluation)."""
CORPUS_DIR = "corpus"
"""Where, under the trainer's work dir, sessions read from runs are exported."""


class SftInputError(PolarError, ValueError):
    """A corpus or setting SFT cannot train on; the message is one line naming what was expected and seen."""


class _TokenRow(msgspec.Struct):
    input_ids: list[int]
    loss_mask: list[int]


class SftCorpus:
    """Token rows (``input_ids``, ``loss_mask``; int64 / uint8 arrays) and where they came from."""

    def __init__(self, input_ids: list[np.ndarray], loss_mask: list[np.ndarray], source: str,
                 manifest: ExportManifest | None = None) -> None:
        self.input_ids = input_ids
        self.loss_mask = loss_mask
        self.source = source
        self.manifest = manifest

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def tokens(self) -> int:
        return sum(len(x) for x in self.input_ids)

    @property
    def trainable(self) -> int:
        return sum(int(m.sum()) for m in self.loss_mask)


def is_export(path: str | os.PathLike[str]) -> bool:
    p = Path(path)
    return (p / "manifest.json").is_file() and (p / "tokens").is_dir()


def load_corpus(sources: Sequence[str | os.PathLike[str]], workdir: Path, *,
                min_reward: float | None = None) -> SftCorpus:
    """The rows to train on (module doc); ``SftInputError`` when there is none, ``MissingShards`` for a path that
    holds no shard."""
    if not sources:
        raise SftInputError("train sft: no source given (expected an SFT export folder or run / shard dirs)")
    exports = [s for s in sources if is_export(s)]
    if exports and len(sources) > 1:
        raise SftInputError(f"train sft: {exports[0]} is an SFT export; give one export, or run / shard dirs "
                            f"(not both, nor several exports), got {len(sources)} sources")
    if exports:
        return read_export(Path(exports[0]))
    from polar_hpc.export.sft import export_sft

    threshold = ACCEPT_REWARD if min_reward is None else min_reward
    select = TraceSelect(status=(TraceStatus.COMPLETED,), min_reward=threshold, trainable_only=True)
    try:
        export_sft(sources, workdir / CORPUS_DIR, select=select, test_fraction=0.0)
    except EmptySelection:
        raise SftInputError(f"train sft: no accepted session in {', '.join(map(str, sources))} (expected "
                            f"completed sessions with reward >= {threshold:g} and trainable traces)") from None
    return read_export(workdir / CORPUS_DIR)


def read_export(folder: Path) -> SftCorpus:
    """The ``train`` split of an SFT export's ``tokens`` variant (jsonl, parquet or hf)."""
    try:
        m = msgspec.json.decode((folder / "manifest.json").read_bytes(), type=ExportManifest)
    except (OSError, msgspec.DecodeError) as err:
        raise SftInputError(f"train sft: {folder / 'manifest.json'}: not an SFT export manifest: {err}") from None
    files = m.files.get("tokens", {}).get(SPLIT, [])
    if not files:
        raise SftInputError(f"train sft: {folder} has no {SPLIT!r} token rows (manifest: {m.traces.get(SPLIT, 0)} "
                            f"{SPLIT} / {m.traces.get('test', 0)} test traces); export accepted sessions first")
    ids: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    for ids_row, mask_row in _rows(folder, m.format, files):
        ids.append(np.asarray(ids_row, dtype=np.int64))
        masks.append(np.asarray(mask_row, dtype=np.uint8))
    corpus = SftCorpus(ids, masks, str(folder), m)
    if not corpus.trainable:
        raise SftInputError(f"train sft: {folder}: none of its {len(corpus)} {SPLIT} rows has a trainable token "
                            "(loss_mask is 0 everywhere)")
    return corpus


def _rows(folder: Path, fmt: str, files: list[str]) -> Any:
    if fmt == "jsonl":
        dec = msgspec.json.Decoder(_TokenRow)
        for f in files:
            with open(folder / f, "rb") as fh:
                for line in fh:
                    if line.strip():
                        row = dec.decode(line)
                        yield row.input_ids, row.loss_mask
    elif fmt == "parquet":
        import pyarrow.parquet as pq

        for f in files:
            t = pq.read_table(folder / f, columns=["input_ids", "loss_mask"])
            yield from zip(t.column("input_ids").to_pylist(), t.column("loss_mask").to_pylist(), strict=True)
    elif fmt == "hf":
        import datasets

        ds = datasets.load_from_disk(str(folder / files[0]))[SPLIT].select_columns(["input_ids", "loss_mask"])
        for row in ds:
            yield row["input_ids"], row["loss_mask"]
    else:
        raise SftInputError(f"train sft: {folder}: unknown export format {fmt!r} (expected jsonl, parquet or hf)")


def fit_length(corpus: SftCorpus, max_length: int | None) -> SftCorpus:
    """Rows cut to their first ``max_length`` tokens; rows left without a trainable token are dropped (logged).
    ``SftInputError`` when none is left."""
    if max_length is None:
        return corpus
    ids: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    lost = cut = 0
    for x, m in zip(corpus.input_ids, corpus.loss_mask, strict=True):
        if len(x) > max_length:
            cut += 1
            lost += int(m[max_length:].sum())
            x, m = x[:max_length], m[:max_length]
        if m.any():
            ids.append(x)
            masks.append(m)
    if not ids:
        first = min(int(np.argmax(m)) for m in corpus.loss_mask if m.any())
        raise SftInputError(f"sft.max_length = {max_length}: no row keeps a trainable token (the earliest one is "
                            f"at position {first}; the longest row has {max(map(len, corpus.input_ids))} tokens)")
    if cut:
        log.warning("sft.max_length = %d cut %d of %d rows: %d of %d trainable tokens do not train, %d rows dropped",
                    max_length, cut, len(corpus), lost, corpus.trainable, len(corpus) - len(ids))
    return SftCorpus(ids, masks, corpus.source, corpus.manifest)


def to_dataset(corpus: SftCorpus) -> Any:
    """TRL's pre-tokenized form: ``input_ids`` and ``assistant_masks`` (module doc)."""
    from datasets import Dataset, Features, List, Value

    features = Features({"input_ids": List(Value("int64")), "assistant_masks": List(Value("int8"))})
    return Dataset.from_dict({"input_ids": [x.tolist() for x in corpus.input_ids],
                              "assistant_masks": [m.astype(np.int8).tolist() for m in corpus.loss_mask]},
                             features=features)


def check_context(corpus: SftCorpus, max_length: int | None, model: Any) -> None:
    """``SftInputError`` when rows (cut to ``max_length``) are longer than the model's positions."""
    limit = getattr(model.config.get_text_config(), "max_position_embeddings", None)
    longest = max(map(len, corpus.input_ids))
    if max_length is not None:
        longest = min(longest, max_length)
    if limit is not None and longest > limit:
        raise SftInputError(f"train sft: rows up to {longest} tokens exceed the model's {limit} positions "
                            f"(max_position_embeddings); set sft.max_length <= {limit}")
