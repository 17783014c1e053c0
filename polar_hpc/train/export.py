"""SFT corpus export: chat-messages records and the token-level records the policy sampled, split by task.

Layout of ``out``::

    chat/{train,test}.jsonl|.parquet    {"messages": [...], "tools": "<JSON>", key, task_id, repo, ...}
    tokens/{train,test}.jsonl|.parquet  {"input_ids", "loss_mask", "logprobs", "prompt_length", key, ...}
    chat/, tokens/ (format hf)          ``datasets.DatasetDict.save_to_disk`` folders
    README.md                           dataset card with counts
    manifest.json                       ExportManifest

Messages are OpenAI chat shaped (role, content, reasoning_content, tool_calls[{id, type, function{name,
arguments}}], tool_call_id, name), every key present in every message, so one Arrow schema fits all rows;
``arguments`` is the JSON text the model wrote and ``tools`` is the JSON text of an OpenAI ``tools`` list.
``input_ids`` = prompt ‖ response exactly as stored; ``loss_mask`` 0 over the prompt.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec
import numpy as np

from polar_hpc.log import get_logger
from polar_hpc.store.encode import blob_items, decode_trace_blob
from polar_hpc.store.shardfile import open_shard, read_tokens
from polar_hpc.train.card import render_card
from polar_hpc.train.index import TraceIndex, TraceSelect, build_index
from polar_hpc.train.split import split_tasks
from polar_hpc.wire.records import ChatMessage, ToolSpec, TraceStatus

log = get_logger("train")

Format = Literal["jsonl", "parquet", "hf"]
SPLITS = ("train", "test")
VARIANTS = ("chat", "tokens")


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


def openai_message(m: ChatMessage) -> dict[str, Any]:
    return {
        "role": m.role,
        "content": m.content,
        "reasoning_content": m.reasoning_content,
        "tool_calls": [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                       for c in m.tool_calls],
        "tool_call_id": m.tool_call_id,
        "name": m.name,
    }


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.parameters}} for t in tools]


def _arrow_schemas() -> tuple[Any, Any]:
    import pyarrow as pa

    call = pa.struct([("id", pa.string()), ("type", pa.string()),
                      ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])
    msg = pa.struct([("role", pa.string()), ("content", pa.string()), ("reasoning_content", pa.string()),
                     ("tool_calls", pa.list_(call)), ("tool_call_id", pa.string()), ("name", pa.string())])
    common = [("key", pa.string()), ("trace_index", pa.int32()), ("task_id", pa.string()), ("repo", pa.string()),
              ("harness", pa.string()), ("reward", pa.float64()), ("session_reward", pa.float64()),
              ("policy_version", pa.int64())]
    chat = pa.schema([("messages", pa.list_(msg)), ("tools", pa.string()), *common])
    tokens = pa.schema([("input_ids", pa.list_(pa.int32())), ("loss_mask", pa.list_(pa.uint8())),
                        ("logprobs", pa.list_(pa.float32())), ("prompt_length", pa.int32()), *common])
    return chat, tokens


class _Sink:
    """Rows of one variant into per-split files."""

    def __init__(self, folder: Path, fmt: Format, schema: Any) -> None:
        self.folder, self.fmt, self.schema = folder, fmt, schema
        folder.mkdir(parents=True, exist_ok=True)
        self.pending: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
        self.files: dict[str, Any] = {}
        self.enc = msgspec.json.Encoder()

    def path(self, split: str) -> Path:
        return self.folder / f"{split}.{'jsonl' if self.fmt == 'jsonl' else 'parquet'}"

    def add(self, split: str, row: dict[str, Any]) -> None:
        self.pending[split].append(row)
        if len(self.pending[split]) >= 256:
            self.flush(split)

    def flush(self, split: str) -> None:
        rows = self.pending[split]
        if self.fmt == "jsonl":
            f = self.files.get(split) or self.files.setdefault(split, open(self.path(split), "wb"))
            f.write(b"".join(self.enc.encode(r) + b"\n" for r in rows))
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            w = self.files.get(split) or self.files.setdefault(split, pq.ParquetWriter(self.path(split),
                                                                                       self.schema))
            w.write_table(pa.Table.from_pylist(rows, schema=self.schema))
        self.pending[split] = []

    def close(self) -> None:
        for s in SPLITS:
            if self.pending[s] or s not in self.files:
                self.flush(s)
            self.files[s].close()
        if self.fmt == "hf":
            import datasets
            import pyarrow.parquet as pq

            dd = datasets.DatasetDict({s: datasets.Dataset(pq.read_table(self.path(s))) for s in SPLITS})
            tmp = self.folder.with_name(self.folder.name + ".hf")
            dd.save_to_disk(str(tmp))
            shutil.rmtree(self.folder)
            os.replace(tmp, self.folder)


def export_sft(
    runs: Sequence[str | os.PathLike[str]],
    out: Path,
    *,
    select: TraceSelect | None = None,
    fmt: Format = "jsonl",
    test_fraction: float = 0.1,
    seed: int = 0,
    index: TraceIndex | None = None,
) -> ExportManifest:
    """Write the selected, deduplicated traces of ``runs`` under ``out`` (see module doc)."""
    select = select or TraceSelect()
    ix = index if index is not None else build_index(runs, select, dedup="content", with_repo=True)
    split_of = split_tasks(zip(ix.task_id, ix.repo, strict=True), test_fraction, seed)
    out.mkdir(parents=True, exist_ok=True)
    chat_schema, tok_schema = _arrow_schemas()
    chat, toks = _Sink(out / "chat", fmt, chat_schema), _Sink(out / "tokens", fmt, tok_schema)
    traces: Counter[str] = Counter()
    trainable: Counter[str] = Counter()
    repos: dict[str, Counter[str]] = defaultdict(Counter)
    repo_tasks: dict[str, set[str]] = defaultdict(set)
    for shard_i in np.unique(ix.shard).tolist():
        rows = np.flatnonzero(ix.shard == shard_i).tolist()
        with open_shard(Path(ix.shards[shard_i]), check=False) as f:
            tok = read_tokens(f)
            blobs = blob_items(f.read("traces/blob"), f.read("traces/blob_offsets"))
        for i in rows:
            tb = decode_trace_blob(blobs[int(ix.trace[i])])
            p0, pl = int(ix.prompt_start[i]), int(ix.prompt_len[i])
            r0, rl = int(ix.response_start[i]), int(ix.response_len[i])
            mask = tok.loss_mask[r0:r0 + rl]
            common = {"key": ix.key[i], "trace_index": int(ix.trace_in_session[i]), "task_id": ix.task_id[i],
                      "repo": ix.repo[i], "harness": ix.harness[i], "reward": float(ix.reward[i]),
                      "session_reward": float(ix.session_reward[i]),
                      "policy_version": int(ix.policy_version[i])}
            split = split_of[ix.task_id[i]]
            chat.add(split, {
                "messages": [openai_message(m) for m in tb.prompt_messages + tb.response_messages],
                "tools": msgspec.json.encode(openai_tools(tb.tools)).decode(), **common})
            toks.add(split, {
                "input_ids": np.concatenate([tok.prompt_ids[p0:p0 + pl], tok.response_ids[r0:r0 + rl]]).tolist(),
                "loss_mask": np.concatenate([np.zeros(pl, np.uint8), mask]).tolist(),
                "logprobs": np.concatenate([np.zeros(pl, np.float32),
                                            tok.response_logprobs[r0:r0 + rl]]).tolist(),
                "prompt_length": pl, **common})
            traces[split] += 1
            trainable[split] += int(mask.sum())
            repos[ix.repo[i]][split] += 1
            repo_tasks[ix.repo[i]].add(ix.task_id[i])
    chat.close()
    toks.close()
    manifest = ExportManifest(
        runs=[str(r) for r in runs], format=fmt, select=select, test_fraction=test_fraction, seed=seed,
        traces={s: traces[s] for s in SPLITS},
        tasks={s: sum(1 for v in split_of.values() if v == s) for s in SPLITS},
        repos={r: {"train": repos[r]["train"], "test": repos[r]["test"], "tasks": len(repo_tasks[r])}
               for r in sorted(repos)},
        harnesses=dict(Counter(ix.harness).most_common()),
        trainable_tokens={s: trainable[s] for s in SPLITS},
        session_duplicates=ix.session_duplicates, content_duplicates=ix.content_duplicates,
        problems=ix.problems,
    )
    (out / "manifest.json").write_bytes(msgspec.json.format(msgspec.json.encode(manifest)))
    (out / "README.md").write_text(render_card(manifest))
    log.info("exported %d train / %d test traces to %s", traces["train"], traces["test"], out)
    return manifest


def status_names(statuses: Sequence[str] | None) -> tuple[TraceStatus, ...] | None:
    return tuple(TraceStatus[s.upper()] for s in statuses) if statuses else None
