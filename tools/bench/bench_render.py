"""ChatTemplate render + encode of a long agent conversation vs the bare ``tokenizers`` encode of the same text.

The conversation is ``tests.fixtures.conversations.agent_conversation(N)`` (system prompt, task, then assistant
turns with reasoning and one tool call each, and tool results; 200 messages ≈ 32k Qwen3 tokens) with 4 tools.
Rows: jinja render only, encode of the rendered text, render_ids (both), the bare ``Tokenizer.encode`` of the same
text, the ChatMessage -> dict conversion, and (``--transformers``) ``apply_chat_template(tokenize=True)``.
Needs the assets (``polar-hpc assets fetch``).

    python tools/bench/bench_render.py [--messages 200] [--repeats 20]
        [--models qwen3-tokenizer smollm2] [--transformers]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for tests.fixtures

from polar_hpc.assets import asset_path  # noqa: E402
from polar_hpc.chat.template import ChatTemplate, to_template_messages  # noqa: E402
from polar_hpc.wire.calls import ChatMessage, ToolCall
from tests.fixtures.conversations import agent_conversation  # noqa: E402


def timed(fns: dict[str, Callable[[], Any]], repeats: int) -> list[tuple[str, float, float]]:
    """(label, median ms, min ms) per function; the functions run round-robin (after one warm-up call each) so
    that load changes on a shared machine hit every row alike. Min is the figure to trust there."""
    samples: dict[str, list[float]] = {label: [] for label in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeats):
        for label, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            samples[label].append((time.perf_counter() - t0) * 1e3)
    return [(label, statistics.median(v), min(v)) for label, v in samples.items()]


def as_canonical(messages: list[dict[str, Any]]) -> list[ChatMessage]:
    out = []
    for m in messages:
        calls = [ToolCall(id=c["id"], name=c["function"]["name"], arguments=str(c["function"]["arguments"]))
                 for c in m.get("tool_calls", [])]
        out.append(ChatMessage(role=m["role"], content=m["content"], reasoning_content=m.get("reasoning_content"),
                               tool_calls=calls, tool_call_id=m.get("tool_call_id")))
    return out


def bench_model(name: str, args: argparse.Namespace) -> None:
    model_dir = asset_path(name)
    t0 = time.perf_counter()
    ct = ChatTemplate.from_model_dir(model_dir)
    load_ms = (time.perf_counter() - t0) * 1e3
    messages, tools = agent_conversation(args.messages)
    text = ct.render(messages, tools)
    n_tokens = len(ct.encode(text))
    canonical = as_canonical(messages)
    bare = ct.tokenizer
    fns: dict[str, Callable[[], Any]] = {
        "render (jinja)": lambda: ct.render(messages, tools),
        "encode (ChatTemplate.encode)": lambda: ct.encode(text),
        "render_ids (render + encode)": lambda: ct.render_ids(messages, tools),
        "bare tokenizers encode": lambda: bare.encode(text, add_special_tokens=False),
        "to_template_messages (ChatMessage)": lambda: to_template_messages(canonical),
    }
    if args.transformers:
        from transformers import AutoTokenizer

        hf = AutoTokenizer.from_pretrained(str(model_dir))
        fns["transformers apply_chat_template"] = lambda: hf.apply_chat_template(
            messages, tools=list[Any](tools), add_generation_prompt=True, tokenize=True)
    rows = timed(fns, args.repeats)
    print(f"\n{name}: {len(messages)} messages, {len(text):,} chars, {n_tokens:,} tokens; "
          f"from_model_dir {load_ms:.0f} ms (first load)")
    bare_min = rows[3][2]
    print(f"{'step':38} {'median ms':>10} {'min ms':>8} {'x bare (min)':>13}")
    for label, med, best in rows:
        print(f"{label:38} {med:10.2f} {best:8.2f} {best / bare_min:13.2f}")
    overhead = rows[2][2] - bare_min
    print(f"render_ids over bare encode (min): {overhead:+.2f} ms ({overhead / bare_min:+.0%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--models", nargs="+", default=["qwen3-tokenizer", "smollm2"])
    parser.add_argument("--transformers", action="store_true", help="also time transformers' apply_chat_template")
    args = parser.parse_args()
    for name in args.models:
        bench_model(name, args)


if __name__ == "__main__":
    main()
