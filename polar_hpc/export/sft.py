"""SFT corpus export: chat records and the token-level records the policy sampled, split by task.

Layout of ``out``::

    chat/{split}-00000-of-0000N.jsonl|.parquet     {"messages": [...], "tools": [...], key, task_id, repo, ...}
    tokens/{split}-00000-of-0000N.jsonl|.parquet   {"input_ids", "loss_mask", "logprobs", "prompt_length", ...}
    chat/, tokens/ (format hf)                     ``datasets.DatasetDict.save_to_disk`` folders
    README.md                                      dataset card: configs "chat" and "tokens", features, counts
    manifest.json                                  ExportManifest

Chat records are the conversational format TRL's ``SFTTrainer`` and ``apply_chat_template(messages,
tools=tools)`` take as they are (``polar_hpc.export.chat``). ``input_ids`` = prompt ‖ response exactly as stored;
``loss_mask`` 0 over the prompt; ``logprobs`` the behaviour policy's, 0 over the prompt. A split without tasks
has no files and is absent from the card. Files are sharded by size (``max_shard_bytes``).
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import msgspec
import numpy as np

from polar_hpc.export.card import render_card
from polar_hpc.export.chat import chat_message, chat_tools
from polar_hpc.export.manifest import ExportManifest
from polar_hpc.export.sft_files import DEFAULT_SHARD_BYTES, SPLITS, VARIANTS, Format, SplitFiles, save_hf
from polar_hpc.export.split import split_tasks
from polar_hpc.log import get_logger
from polar_hpc.store.encode import decode_trace_blob
from polar_hpc.store.index import TraceIndex, build_index
from polar_hpc.store.reader import EmptySelection
from polar_hpc.store.select import TraceSelect
from polar_hpc.store.shardfile import open_shard, read_policies, read_tokens, read_trace_blobs
from polar_hpc.wire.traces import TraceStatus, trace_status

log = get_logger("train")

TRACE_FIELDS: dict[str, tuple[str, str]] = {
    "prompt_ids": ("tokens", "input_ids"),
    "response_ids": ("tokens", "input_ids"),
    "loss_mask": ("tokens", "loss_mask"),
    "response_logprobs": ("tokens", "logprobs"),
    "prompt_messages": ("chat", "messages"),
    "response_messages": ("chat", "messages"),
    "tools": ("chat", "tools"),
    "reward": ("chat", "reward"),
    "policy": ("chat", "policy"),
}
"""Each ``Trace`` field an SFT record carries: the variant and the key that hold it."""
TRACE_FIELDS_LEFT_OUT: dict[str, str] = {
    "finish_reason": "not a feature of an SFT record; `shards export` has it",
    "meta": "the builder's bookkeeping; `shards export` has it (``metadata``)",
    "extra": "a caller's own trace keys; `shards export` has them (``metadata``)",
    "trainable": "the selection decides which traces a corpus takes (trainable only unless --include-untrainable)",
    "filter": "the reasons of `trainable`; `shards export` has them",
    "response_versions": "the weight version per token is for RL's off-policy correction; `shards export` has it",
    "response_top_ids": "the sampler's top-k is for RL's off-policy correction; `shards export` has it",
    "response_top_logprobs": "the sampler's top-k is for RL's off-policy correction; `shards export` has it",
}
"""The ``Trace`` fields an SFT record leaves out, and why (tests/unit/store/test_columns.py: every field is in one
of the two)."""
__all__ = ["EmptySelection", "export_sft", "status_names"]


def export_sft(
    runs: Sequence[str | os.PathLike[str]],
    out: Path,
    *,
    select: TraceSelect | None = None,
    fmt: Format = "jsonl",
    test_fraction: float = 0.1,
    seed: int = 0,
    index: TraceIndex | None = None,
    allow_empty: bool = False,
    max_shard_bytes: int = DEFAULT_SHARD_BYTES,
) -> ExportManifest:
    """Write the selected, deduplicated traces of ``runs`` under ``out`` (see module doc).

    Raises ``EmptySelection`` when nothing matches (unless ``allow_empty``), naming the filter; a missing run
    path raises ``MissingShards`` (``polar_hpc.store.reader``) before anything is written.
    """
    select = select or TraceSelect()
    ix = index if index is not None else build_index(runs, select, dedup="content", with_repo=True,
                                                     must_exist=True)
    if not len(ix) and not allow_empty:
        raise EmptySelection(f"no traces in {', '.join(map(str, runs))} ({len(ix.shards)} shards with matching "
                             f"sessions) match {select.describe()}; nothing written to {out}")
    split_of = split_tasks(zip(ix.task_id, ix.repo, strict=True), test_fraction, seed)
    _prepare(out)
    writers = {(v, s): SplitFiles(out / v, s, v, fmt, max_shard_bytes) for v in VARIANTS for s in SPLITS}
    for v in VARIANTS:
        (out / v).mkdir(parents=True, exist_ok=True)
    traces: Counter[str] = Counter()
    trainable: Counter[str] = Counter()
    repos: dict[str, Counter[str]] = defaultdict(Counter)
    repo_tasks: dict[str, set[str]] = defaultdict(set)
    for shard_i in np.unique(ix.shard).tolist():
        rows = np.flatnonzero(ix.shard == shard_i).tolist()
        with open_shard(Path(ix.shards[shard_i]), check=False) as f:
            tok = read_tokens(f)
            blobs = read_trace_blobs(f)
            policies = read_policies(f)
        for i in rows:
            tb = decode_trace_blob(blobs[int(ix.trace[i])])
            p0, pl = int(ix.prompt_start[i]), int(ix.prompt_len[i])
            r0, rl = int(ix.response_start[i]), int(ix.response_len[i])
            mask = tok.loss_mask[r0:r0 + rl]
            common = {"key": ix.key[i], "trace_index": int(ix.trace_in_session[i]), "task_id": ix.task_id[i],
                      "repo": ix.repo[i], "harness": ix.harness[i], "reward": float(ix.reward[i]),
                      "session_reward": float(ix.session_reward[i]),
                      "policy_version": int(ix.policy_version[i]), "policy": policies[int(ix.trace[i])]}
            split = split_of[ix.task_id[i]]
            writers["chat", split].add({
                "messages": [chat_message(m) for m in tb.prompt_messages + tb.response_messages],
                "tools": chat_tools(tb.tools) or None, **common})
            writers["tokens", split].add({
                "input_ids": np.concatenate([tok.prompt_ids[p0:p0 + pl], tok.response_ids[r0:r0 + rl]]),
                "loss_mask": np.concatenate([np.zeros(pl, np.uint8), mask]),
                "logprobs": np.concatenate([np.zeros(pl, np.float32), tok.response_logprobs[r0:r0 + rl]]),
                "prompt_length": pl, **common})
            traces[split] += 1
            trainable[split] += int(mask.sum())
            repos[ix.repo[i]][split] += 1
            repo_tasks[ix.repo[i]].add(ix.task_id[i])
    files: dict[str, dict[str, list[str]]] = {}
    for v in VARIANTS:
        by_split = {s: writers[v, s].close() for s in SPLITS}
        if fmt == "hf":
            if any(by_split.values()):
                save_hf(out / v, by_split, max_shard_bytes)
            files[v] = {s: [v] for s, paths in by_split.items() if paths}
        else:
            files[v] = {s: [p.relative_to(out).as_posix() for p in paths] for s, paths in by_split.items() if paths}
    manifest = ExportManifest(
        runs=[str(r) for r in runs], format=fmt, select=select, test_fraction=test_fraction, seed=seed,
        traces={s: traces[s] for s in SPLITS},
        tasks={s: sum(1 for v in split_of.values() if v == s) for s in SPLITS},
        repos={r: {"train": repos[r]["train"], "test": repos[r]["test"], "tasks": len(repo_tasks[r])}
               for r in sorted(repos)},
        harnesses=dict(Counter(ix.harness).most_common()),
        trainable_tokens={s: trainable[s] for s in SPLITS},
        session_duplicates=ix.session_duplicates, content_duplicates=ix.content_duplicates,
        problems=ix.problems, sessions_per_run=ix.sessions_per_run(), files=files,
    )
    (out / "manifest.json").write_bytes(msgspec.json.format(msgspec.json.encode(manifest)))
    render_card(manifest).save(str(out / "README.md"))
    log.info("exported %d train / %d test traces to %s", traces["train"], traces["test"], out)
    return manifest


def _prepare(out: Path) -> None:
    """``out`` empty or new, or a previous export (whose variant folders are replaced); anything else refused."""
    import shutil

    out.mkdir(parents=True, exist_ok=True)
    ours = [out / v for v in VARIANTS if (out / v).exists()]
    if ours and not (out / "manifest.json").is_file():
        raise FileExistsError(f"{out} holds {', '.join(p.name for p in ours)}/ but no manifest.json of an "
                              "earlier export; choose an empty --out folder")
    for p in ours:
        shutil.rmtree(p)


def status_names(statuses: Sequence[str] | None) -> tuple[TraceStatus, ...] | None:
    return tuple(trace_status(s) for s in statuses) if statuses else None
