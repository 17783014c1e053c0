"""OpenAI Chat's streamed chunks for a reply being sampled (keep-alive: a chunk with an empty delta)."""

from __future__ import annotations

from typing import Any

from polar_hpc.providers.openai_chat.respond import chunk, tail, tool_calls
from polar_hpc.providers.reply import Reply
from polar_hpc.providers.writer import Writer


class ChatWriter(Writer):
    def _chunk(self, delta: dict[str, Any]) -> bytes:
        return chunk(self.id, self.created, self.model, delta)

    def start(self) -> bytes:
        return self._chunk({"role": "assistant", "content": ""})

    def keepalive(self) -> bytes:
        return self._chunk({})

    def _reasoning(self, delta: str) -> bytes:
        return self._chunk({"reasoning_content": delta})

    def _text(self, delta: str) -> bytes:
        return self._chunk({"content": delta})

    def finish(self, r: Reply) -> bytes:
        p = r.parsed
        out = self._reasoning_rest(p.reasoning)
        rest = self._rest(p.content, self.sent_text, "text")
        if rest:
            out += self.text(rest)
        if p.tool_calls:
            out += self._chunk({"tool_calls": tool_calls(r, indexed=True)})
        return out + tail(r)
