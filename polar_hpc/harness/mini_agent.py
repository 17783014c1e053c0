"""A small tool-calling agent on the official ``openai`` SDK, for the ``shell`` harness.

    python3 -m polar_hpc.harness.mini_agent [--max-turns N] INSTRUCTION...

Reads ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``OPENAI_MODEL`` like any OpenAI client, offers one ``bash`` tool,
runs each call in the current directory, and stops after a reply without tool calls or ``--max-turns`` turns.
This is a user program run inside the sandbox, so it prints to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

BASH_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command in the repository and return its output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command to run."}},
            "required": ["command"],
        },
    },
}

SYSTEM = (
    "You are a coding agent working in a git repository. Use the bash tool to inspect files, edit them and run "
    "tests. When the task is done, answer with a short summary and no tool call."
)


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def run_bash(arguments: str, timeout_s: float) -> str:
    try:
        command = json.loads(arguments).get("command", "")
    except (json.JSONDecodeError, AttributeError):
        return f"error: tool arguments must be JSON with a 'command' string, got {arguments[:200]!r}"
    try:
        done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"error: command timed out after {timeout_s:.0f}s"
    out = (done.stdout + done.stderr)[-4000:]
    return f"exit code {done.returncode}\n{out}"


def main(argv: list[str] | None = None) -> int:
    from openai import OpenAI

    parser = argparse.ArgumentParser(prog="mini_agent")
    parser.add_argument("--max-turns", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--tool-timeout", type=float, default=30.0)
    parser.add_argument("instruction", nargs="+")
    args = parser.parse_args(argv)

    client = OpenAI(max_retries=0, timeout=600)
    model = os.environ.get("OPENAI_MODEL", "policy")
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": " ".join(args.instruction)},
    ]
    for turn in range(args.max_turns):
        reply = client.chat.completions.create(
            model=model, messages=messages, tools=[BASH_TOOL], max_tokens=args.max_tokens
        )
        msg = reply.choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        say(f"[turn {turn + 1}] {msg.content or ''}".rstrip())
        if not msg.tool_calls:
            return 0
        for call in msg.tool_calls:
            # only the bash function tool is offered, so every call is a function call
            result = run_bash(call.function.arguments, args.tool_timeout)  # type: ignore[union-attr]
            say(f"[tool] {call.function.arguments} -> {result[:200]}")  # type: ignore[union-attr]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    say(f"[stop] max turns ({args.max_turns}) reached")
    return 0


if __name__ == "__main__":
    sys.exit(main())
