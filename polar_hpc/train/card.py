"""Dataset card (README.md) of an SFT export."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from polar_hpc.train.export import ExportManifest


def render_card(m: ExportManifest) -> str:
    sel = {k: v for k, v in msgspec.structs.asdict(m.select).items() if v not in (None, False)}
    files = {"jsonl": "`{split}.jsonl`", "parquet": "`{split}.parquet`", "hf": "`datasets.load_from_disk`"}
    lines = [
        "---",
        "task_categories: [text-generation]",
        "tags: [agent, tool-use, sft, polar-hpc]",
        "configs:",
        *(f"- config_name: {v}\n  data_files:\n  - split: train\n    path: {v}/train.{m.format}\n"
          f"  - split: test\n    path: {v}/test.{m.format}" for v in ("chat", "tokens") if m.format != "hf"),
        "---",
        "",
        "# Agent trajectories (SFT export from polar-hpc)",
        "",
        "Traces recorded at token level by the polar-hpc gateway proxy, filtered and deduplicated.",
        "",
        f"- Source runs: {', '.join(f'`{r}`' for r in m.runs)}",
        f"- Selection: {sel or 'all committed traces'}",
        f"- Split: by task, stratified by repository, test fraction {m.test_fraction} (seed {m.seed})",
        f"- Format: {m.format} ({files[m.format].format(split='{train,test}')})",
        f"- Duplicates dropped: {m.session_duplicates} sessions (same key twice in a run), "
        f"{m.content_duplicates} traces (same tokens as an earlier trace)",
        "",
        "## Counts",
        "",
        "| split | tasks | traces | trainable tokens |",
        "|---|---:|---:|---:|",
        *(f"| {s} | {m.tasks[s]} | {m.traces[s]} | {m.trainable_tokens[s]} |" for s in ("train", "test")),
        "",
        "| repository | tasks | train traces | test traces |",
        "|---|---:|---:|---:|",
        *(f"| {r} | {c['tasks']} | {c['train']} | {c['test']} |" for r, c in m.repos.items()),
        "",
        "| harness | traces |",
        "|---|---:|",
        *(f"| {h or '(none)'} | {n} |" for h, n in m.harnesses.items()),
        "",
        "## Variants",
        "",
        "- `chat/`: `messages` (OpenAI chat shape; `tool_calls[].function.arguments` is the JSON text the model "
        "wrote) and `tools` (JSON text of an OpenAI `tools` list): what TRL, LLaMA-Factory and axolotl read.",
        "- `tokens/`: `input_ids` = prompt ‖ response exactly as the policy saw and sampled them, `loss_mask` "
        "(1 on sampled tokens, 0 on the prompt and on tool outputs between turns), `logprobs` of the behaviour "
        "policy (0 where masked), `prompt_length`. Use it to train without re-tokenizing.",
        "",
    ]
    if m.problems:
        lines += ["## Shards skipped", "", *(f"- {p}" for p in m.problems), ""]
    return "\n".join(lines)
