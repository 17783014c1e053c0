"""The manifest of an SFT export (``manifest.json``): what was selected and what each split holds; the dataset
card (:mod:`polar_hpc.export.card`) is rendered from it."""

from __future__ import annotations

import msgspec

from polar_hpc.export.sft_files import SPLITS
from polar_hpc.store.select import TraceSelect


class ExportManifest(msgspec.Struct, kw_only=True):
    runs: list[str]
    format: str
    select: TraceSelect
    test_fraction: float
    seed: int
    traces: dict[str, int]
    """Per split."""
    tasks: dict[str, int]
    repos: dict[str, dict[str, int]]
    """repo -> {"train": traces, "test": traces, "tasks": n}."""
    harnesses: dict[str, int]
    trainable_tokens: dict[str, int]
    session_duplicates: int
    content_duplicates: int
    problems: list[str]
    sessions_per_run: dict[str, int] = msgspec.field(default_factory=dict)
    """Sessions exported from each run (as given; each run deduplicated on its own)."""
    files: dict[str, dict[str, list[str]]] = msgspec.field(default_factory=dict)
    """variant -> split -> data files relative to the export folder (hf: the folder itself)."""

    @property
    def splits(self) -> list[str]:
        """Splits that hold traces."""
        return [s for s in SPLITS if self.traces.get(s)]
