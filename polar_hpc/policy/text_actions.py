"""The oracle's replies for harnesses that act through text: a thought line, then one fenced block.

A turn's commands become one command (joined with `` && ``; a command that ends in a heredoc is put in a brace
group so the join does not land on its terminator line). The fence is the harness's own info string
(``ActionFormat.fence``); the command is written as is between the fence lines, which is what mini-swe-agent's
regex (```` ```mswea_bash_command\\s*\\n(.*?)\\n``` ````) takes back whole, unless a line of the command
starts with three backticks (a heredoc writing Markdown): the regex would end the action there, so such a
command is sent base64-encoded and decoded into ``sh`` (mini-swe-agent runs actions with ``/bin/sh -c``), the
same command run the same way.

The turn is the number of assistant replies in the request's history (text-action harnesses keep one linear,
append-only history), so a retried request gets the same turn.
"""

from __future__ import annotations

import base64
import re

from polar_hpc.chat.parse import parse_reply
from polar_hpc.config.run import ToolParser
from polar_hpc.policy.script import OracleError, OracleScript, Turn, turns
from polar_hpc.wire.actions import ActionFormat
from polar_hpc.wire.calls import CanonicalRequest, ToolSpec

THOUGHTS = {
    "look": "I need to understand the repository first: its state and the file the fix touches.",
    "apply": "I apply the fix to the source.",
    "verify": "I run the tests to check the fix.",
    "answer": "The fix is in place and verified; I submit my work.",
}
_HEREDOC_END = re.compile(r"\n[A-Za-z_][A-Za-z0-9_]*$")
FENCE = "```"


def text_turns_done(req: CanonicalRequest) -> int:
    return sum(1 for m in req.messages if m.role == "assistant")


def text_turn(script: OracleScript, req: CanonicalRequest) -> Turn:
    plan = turns(script, parallel=False)
    return plan[min(text_turns_done(req), len(plan) - 1)]


def join_commands(commands: tuple[str, ...]) -> str:
    """One command from several: `` && ``, a multi-line command in ``{ ...\\n}`` (its heredoc stays intact)."""
    if len(commands) == 1:
        return commands[0]
    parts = [f"{{ {c}\n}}" if "\n" in c or _HEREDOC_END.search(c) else c for c in commands]
    return " && ".join(parts)


def action_text(turn: Turn, fmt: ActionFormat, *, encode: bool = False) -> str:
    """The reply for ``turn``: the thought line and one fenced block with the turn's command (its finishing
    command for the final answer, where the harness has one)."""
    if fmt.kind != "text":
        raise OracleError(f"action format {fmt.name}: not a text format")
    if turn.commands:
        command = join_commands(turn.commands)
    elif fmt.finish is not None:
        command = fmt.finish
    else:
        return turn.answer
    if encode or "\n" + FENCE in command:
        command = f"printf %s {base64.b64encode(command.encode()).decode()} | base64 -d | sh"
    thought = THOUGHTS.get(turn.label, f"Next step: {turn.label}.")
    return f"{fmt.thought_prefix}{thought}\n\n{FENCE}{fmt.fence}\n{command}\n{FENCE}"


def checked_action_text(turn: Turn, fmt: ActionFormat, parser: ToolParser, tools: list[ToolSpec], task: str) -> str:
    """:func:`action_text`, parsed back as the proxy parses a reply: one whose command would read as tool calls
    (a patch holding the model's tool-call markup) or not come back whole goes again with the command encoded."""
    for encode in (False, True):
        text = action_text(turn, fmt, encode=encode)
        parsed = parse_reply(text, parser, tools)
        if not parsed.tool_calls and parsed.parse_error is None and parsed.content.strip() == text.strip():
            return text
    raise OracleError(f"task {task or '(unnamed)'}: the oracle's {turn.label} text action does not parse back as "
                      f"plain text in the {parser} format; the session cannot go on")
