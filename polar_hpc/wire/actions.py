"""How a harness reads the model's actions: tool calls, or commands written in the reply's text.

A harness adapter declares it (``BaseAdapter.action_format``); the oracle writes its replies in it and the
completion record names it (``CompletionRecord.action_format``). Never guessed from a prompt.
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

ActionKind = Literal["tool_calls", "text"]


class ActionFormat(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """``tool_calls``: the shell tool the request offers. ``text``: one fenced block per reply, opened by
    ```` ```<fence> ````, after a line starting ``thought_prefix``; ``finish``, alone in a step, ends the run."""

    kind: ActionKind = "tool_calls"
    fence: str = ""
    """The fence's info string (mini-swe-agent: ``mswea_bash_command``); text actions only."""
    thought_prefix: str = ""
    finish: str | None = None
    """The command that ends the harness's run (mini-swe-agent: ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``);
    None: a plain answer without actions ends it."""

    def __post_init__(self) -> None:
        if self.kind == "text" and not self.fence:
            raise ValueError("a text action format needs its fence's info string (e.g. 'mswea_bash_command')")

    @property
    def name(self) -> str:
        """What the completion record says: ``tool_calls``, or ``text:<fence>``."""
        return "tool_calls" if self.kind == "tool_calls" else f"text:{self.fence}"

    def text_actions(self, text: str) -> list[str]:
        """The commands a text-action harness reads from a reply (mini-swe-agent's regex,
        ```` ```<fence>\\s*\\n(.*?)\\n``` ````; it acts only when there is exactly one); none for tool calls."""
        if self.kind != "text":
            return []
        return re.findall(rf"```{re.escape(self.fence)}\s*\n(.*?)\n```", text, re.DOTALL)


TOOL_CALLS = ActionFormat()
