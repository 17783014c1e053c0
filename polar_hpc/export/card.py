"""Dataset card (README.md) of an SFT export: ``huggingface_hub.DatasetCard`` with ``configs`` (one per variant,
only the splits that hold traces) and ``dataset_info`` (features, split sizes) written by ``datasets``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from polar_hpc.export.sft_files import SPLITS, VARIANTS, features

if TYPE_CHECKING:
    from huggingface_hub import DatasetCard

    from polar_hpc.export.manifest import ExportManifest


def card_data(m: ExportManifest) -> Any:
    import datasets
    from huggingface_hub import DatasetCardData

    data = DatasetCardData(task_categories=["text-generation"], tags=["agent", "tool-use", "sft", "polar-hpc"],
                           pretty_name="polar-hpc agent trajectories")
    if m.format != "hf" and m.splits:
        data["configs"] = [
            {"config_name": v, "default": v == "chat",
             "data_files": [{"split": s, "path": f"{v}/{s}-*"} for s in SPLITS if s in m.files.get(v, {})]}
            for v in VARIANTS
        ]
        infos = {
            v: datasets.DatasetInfo(features=features(v), config_name=v, splits=datasets.SplitDict(
                {s: datasets.SplitInfo(name=s, num_examples=m.traces[s]) for s in m.splits}))
            for v in VARIANTS
        }
        datasets.info.DatasetInfosDict(infos).to_dataset_card_data(data)
    return data


def _loading(m: ExportManifest) -> list[str]:
    if not m.splits:
        return ["No trace matched the selection (exported with `--allow-empty`): there are no data files."]
    if m.format == "hf":
        return ["```python", "import datasets", 'chat = datasets.load_from_disk("chat")      # DatasetDict',
                'tokens = datasets.load_from_disk("tokens")', "```"]
    builder = "json" if m.format == "jsonl" else "parquet"
    first = m.splits[0]
    return ["```python", "import datasets",
            'chat = datasets.load_dataset("path/to/this/folder", "chat")        # the configs below',
            'tokens = datasets.load_dataset("path/to/this/folder", "tokens")',
            f'chat = datasets.load_dataset("{builder}", data_files={{"{first}": "chat/{first}-*.{m.format}"}})',
            "```"]


def render_card(m: ExportManifest) -> DatasetCard:
    from huggingface_hub import DatasetCard

    sel = {k: v for k, v in msgspec.structs.asdict(m.select).items() if v not in (None, False)}
    absent = [s for s in SPLITS if s not in m.splits]
    split_note = (f"Split by task, stratified by repository, test fraction {m.test_fraction} (seed {m.seed})."
                  + (f" No {' or '.join(absent)} split: no task went there ({m.tasks['train']} train / "
                     f"{m.tasks['test']} test tasks)." if absent else ""))
    lines = [
        "# Agent trajectories (SFT export from polar-hpc)",
        "",
        "Traces recorded at token level by the polar-hpc gateway proxy, filtered and deduplicated.",
        "",
        f"- Source runs: {', '.join(f'`{r}`' for r in m.runs)}",
        f"- Selection: {sel or 'all committed traces'}",
        f"- {split_note}",
        f"- Format: {m.format}; splits: {', '.join(m.splits) or 'none'}",
        f"- Duplicates dropped: {m.session_duplicates} sessions (same key twice in a run), "
        f"{m.content_duplicates} traces (same tokens as an earlier trace)",
        "",
        "## Loading",
        "",
        *_loading(m),
        "",
        "## Counts",
        "",
        "| split | tasks | traces | trainable tokens |",
        "|---|---:|---:|---:|",
        *(f"| {s} | {m.tasks[s]} | {m.traces[s]} | {m.trainable_tokens[s]} |" for s in SPLITS),
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
        "- `chat`: `messages` and `tools` in the conversational format TRL's `SFTTrainer` and "
        "`tokenizer.apply_chat_template(messages, tools=tools)` take as they are: a message has `role`, `content` "
        "and only the fields it uses (`reasoning_content`, `tool_calls`, `tool_call_id`, `name`); tool-call "
        "`arguments` are JSON objects; `tools` is a list of JSON-schema function dicts (null when the trace had "
        "none).",
        "- `tokens`: `input_ids` = prompt ‖ response exactly as the policy saw and sampled them, `loss_mask` "
        "(1 on sampled tokens, 0 on the prompt and on tool outputs between turns), `logprobs` of the behaviour "
        "policy (0 where masked), `prompt_length`. Train on it without re-tokenizing: labels = `input_ids` where "
        "`loss_mask` is 1, else -100.",
        "- Both: `policy` is `sample` for tokens the policy sampled and `oracle` for gold demonstrations (the "
        "task's reference solution written as the model's reply; `logprobs` are the model's under teacher forcing, "
        "not a behaviour policy's).",
        "",
    ]
    if m.problems:
        lines += ["## Shards skipped", "", *(f"- {p}" for p in m.problems), ""]
    content = f"---\n{card_data(m).to_yaml()}\n---\n\n" + "\n".join(lines)
    return DatasetCard(content)
