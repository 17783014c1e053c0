"""Anthropic's streamed events for a reply being sampled (keep-alive: ``ping`` events after ``message_start``)."""

from __future__ import annotations

from typing import Any

from polar_hpc.providers.anthropic.respond import message, stop_reason
from polar_hpc.providers.reply import ENC, Reply, arguments_object, signature, sse
from polar_hpc.providers.writer import Writer


class AnthropicWriter(Writer):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._index = -1
        self._open: str | None = None

    def start(self) -> bytes:
        msg = message(self._stub(), [], done=False)
        return sse("message_start", {"type": "message_start", "message": msg})

    def keepalive(self) -> bytes:
        return sse("ping", {"type": "ping"})

    def _block(self, kind: str, block: dict[str, Any]) -> bytes:
        out = self._close()
        self._index += 1
        self._open = kind
        return out + sse("content_block_start", {"type": "content_block_start", "index": self._index,
                                                 "content_block": block})

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return sse("content_block_delta", {"type": "content_block_delta", "index": self._index, "delta": delta})

    def _close(self, reasoning: str | None = None) -> bytes:
        if self._open is None:
            return b""
        out = b""
        if self._open == "thinking":
            out = self._delta({"type": "signature_delta", "signature": signature(reasoning or self.sent_reasoning)})
        self._open = None
        return out + sse("content_block_stop", {"type": "content_block_stop", "index": self._index})

    def _reasoning(self, delta: str) -> bytes:
        out = b"" if self._open == "thinking" else self._block("thinking", {"type": "thinking", "thinking": "",
                                                                              "signature": ""})
        return out + self._delta({"type": "thinking_delta", "thinking": delta})

    def reasoning_done(self, full: str) -> bytes:
        if self._open != "thinking":
            return b""
        rest = self._rest(full, self.sent_reasoning, "reasoning")
        out = self._delta({"type": "thinking_delta", "thinking": rest}) if rest else b""
        self.sent_reasoning += rest
        return out + self._close(full)

    def _text(self, delta: str) -> bytes:
        out = b"" if self._open == "text" else self._block("text", {"type": "text", "text": ""})
        return out + self._delta({"type": "text_delta", "text": delta})

    def finish(self, r: Reply) -> bytes:
        p = r.parsed
        out = b""
        if self._open == "thinking":
            out += self.reasoning_done(p.reasoning or self.sent_reasoning)
        elif p.reasoning and self._index < 0:  # reasoning the parse found but nothing streamed as such
            out += self._block("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            out += self._delta({"type": "thinking_delta", "thinking": p.reasoning}) + self._close(p.reasoning)
        rest = self._rest(p.content, self.sent_text, "text")
        if self._open == "text":
            out += self.text(rest) if rest else b""
        elif p.content or not p.tool_calls:
            out += self._block("text", {"type": "text", "text": ""})
            out += self.text(rest) if rest else b""
        out += self._close()
        for c in p.tool_calls:
            out += self._block("tool_use", {"type": "tool_use", "id": c.id, "name": c.name, "input": {}})
            partial = ENC.encode(arguments_object(c.arguments)).decode()
            out += self._delta({"type": "input_json_delta", "partial_json": partial}) + self._close()
        delta = {"stop_reason": stop_reason(r), "stop_sequence": r.stop_sequence}
        out += sse("message_delta", {"type": "message_delta", "delta": delta,
                                     "usage": {"output_tokens": r.output_tokens}})
        return out + sse("message_stop", {"type": "message_stop"})
