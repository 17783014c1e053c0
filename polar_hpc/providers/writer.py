"""The base of the provider-shaped SSE writers for a reply that is still being sampled.

A writer is made before the first token (it knows the completion id, model and prompt size) and turns each
released piece into that provider's events; :meth:`Writer.finish` gets the parsed reply (the same ``Reply``
the JSON and the synthesized streams are built from) and sends what is left: the rest of the text, tool calls
in the provider's shape, the finish reason and usage. Keep-alives are events each provider's official SDKs
accept: Anthropic ``ping`` events (after ``message_start``), OpenAI Chat chunks with an empty delta, OpenAI
Responses ``response.in_progress`` events, and for Google a blank line (its JS SDK reads ``data:`` lines only:
an SSE comment stalls its parser, while whitespace before a ``data:`` line is skipped).
"""

from __future__ import annotations

from polar_hpc.chat.live_text import remainder
from polar_hpc.chat.parse import ParsedReply
from polar_hpc.providers.reply import Reply
from polar_hpc.providers.request import ReplyOptions


class Writer:
    """Base: subclasses emit bytes for each step. ``sent_reasoning`` / ``sent_text`` are what the client has."""

    def __init__(self, completion_id: str, model: str, created: int, prompt_tokens: int, options: ReplyOptions) -> None:
        self.id = completion_id
        self.model = model
        self.created = created
        self.prompt_tokens = prompt_tokens
        self.options = options
        self.sent_reasoning = ""
        self.sent_text = ""
        self.mismatch: str | None = None
        """Set when the parsed reply does not extend what was streamed (the client keeps what it got)."""

    def start(self) -> bytes:
        return b""

    def _stub(self) -> Reply:
        """The reply as it stands before any token (for the opening events)."""
        return Reply(id=self.id, model=self.model, created=self.created, parsed=ParsedReply(), finish="stop",
                     prompt_tokens=self.prompt_tokens, output_tokens=0, options=self.options)

    def keepalive(self) -> bytes:
        raise NotImplementedError

    def reasoning(self, delta: str) -> bytes:
        self.sent_reasoning += delta
        return self._reasoning(delta)

    def reasoning_done(self, full: str) -> bytes:
        return b""

    def text(self, delta: str) -> bytes:
        self.sent_text += delta
        return self._text(delta)

    def finish(self, reply: Reply) -> bytes:
        raise NotImplementedError

    def _reasoning(self, delta: str) -> bytes:
        return b""

    def _text(self, delta: str) -> bytes:
        raise NotImplementedError

    def _reasoning_rest(self, reasoning: str | None) -> bytes:
        """The parsed reasoning the client does not have yet, as reasoning events."""
        rest = self._rest(reasoning, self.sent_reasoning, "reasoning")
        return self.reasoning(rest) if rest else b""

    def _rest(self, final: str | None, sent: str, what: str) -> str:
        final = final or ""
        if sent and not final.startswith(sent):
            self.mismatch = f"streamed {what} is not a prefix of the parsed {what}"
        return remainder(final, sent)
