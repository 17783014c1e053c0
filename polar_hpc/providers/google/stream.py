"""Google's streamed chunks for a reply being sampled (keep-alive: a blank line, see ``KEEPALIVE``)."""

from __future__ import annotations

from typing import Any

from polar_hpc.providers.google.respond import KEEPALIVE, body, finish_reason, parts, usage
from polar_hpc.providers.reply import Reply, sse
from polar_hpc.providers.writer import Writer


class GoogleWriter(Writer):
    def _chunk(self, parts: list[dict[str, Any]]) -> bytes:
        return sse(None, body(self.id, self.model, parts))

    def keepalive(self) -> bytes:
        return KEEPALIVE

    def _reasoning(self, delta: str) -> bytes:
        return self._chunk([{"text": delta, "thought": True}]) if self.options.include_thoughts else b""

    def _text(self, delta: str) -> bytes:
        return self._chunk([{"text": delta}])

    def finish(self, r: Reply) -> bytes:
        p = r.parsed
        out = self._reasoning_rest(p.reasoning)
        rest = self._rest(p.content, self.sent_text, "text")
        self.sent_text += rest
        chunk = body(r.id, r.model, parts(r, rest, thoughts=False), finish_reason(r),
                      usage(r))
        return out + sse(None, chunk)
