"""OpenAI Responses' streamed events for a reply being sampled (keep-alive: ``response.in_progress``)."""

from __future__ import annotations

from typing import Any

from polar_hpc.providers.openai_responses.normalize import encrypt_reasoning
from polar_hpc.providers.openai_responses.respond import final_status, item_events, output_items, response_object
from polar_hpc.providers.reply import Reply, sse
from polar_hpc.providers.writer import Writer


class ResponsesWriter(Writer):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._seq = 0
        self._next_index = 0
        self._reasoning_index: int | None = None
        self._reasoning_open = False
        self._message_index: int | None = None

    def _ev(self, name: str, data: dict[str, Any]) -> bytes:
        out = sse(name, {"type": name, "sequence_number": self._seq, **data})
        self._seq += 1
        return out

    def start(self) -> bytes:
        resp = response_object(self._stub(), [], "in_progress")
        return self._ev("response.created", {"response": resp}) + self._ev("response.in_progress", {"response": resp})

    def keepalive(self) -> bytes:
        return self._ev("response.in_progress", {"response": response_object(self._stub(), [], "in_progress")})

    def _rbase(self) -> dict[str, Any]:
        return {"item_id": f"rs_{self.id}", "output_index": self._reasoning_index, "summary_index": 0}

    def _reasoning(self, delta: str) -> bytes:
        out = b""
        if self._reasoning_index is None:
            self._reasoning_index = self._next_index
            self._next_index += 1
            self._reasoning_open = True
            item = {"type": "reasoning", "id": f"rs_{self.id}", "summary": []}
            out += self._ev("response.output_item.added", {"output_index": self._reasoning_index, "item": item})
            out += self._ev("response.reasoning_summary_part.added",
                            {**self._rbase(), "part": {"type": "summary_text", "text": ""}})
        return out + self._ev("response.reasoning_summary_text.delta", {**self._rbase(), "delta": delta})

    def reasoning_done(self, full: str) -> bytes:
        if not self._reasoning_open:
            return b""
        rest = self._rest(full, self.sent_reasoning, "reasoning")
        out = self._ev("response.reasoning_summary_text.delta", {**self._rbase(), "delta": rest}) if rest else b""
        self.sent_reasoning += rest
        self._reasoning_open = False
        item: dict[str, Any] = {"type": "reasoning", "id": f"rs_{self.id}",
                                "summary": [{"type": "summary_text", "text": full}]}
        if self.options.encrypted_reasoning:
            item["encrypted_content"] = encrypt_reasoning(full)
        out += self._ev("response.reasoning_summary_text.done", {**self._rbase(), "text": full})
        out += self._ev("response.reasoning_summary_part.done",
                        {**self._rbase(), "part": {"type": "summary_text", "text": full}})
        return out + self._ev("response.output_item.done", {"output_index": self._reasoning_index, "item": item})

    def _mbase(self) -> dict[str, Any]:
        return {"item_id": f"msg_{self.id}", "output_index": self._message_index, "content_index": 0}

    def _text(self, delta: str) -> bytes:
        out = b""
        if self._message_index is None:
            self._message_index = self._next_index
            self._next_index += 1
            item = {"type": "message", "id": f"msg_{self.id}", "status": "in_progress", "role": "assistant",
                    "content": []}
            out += self._ev("response.output_item.added", {"output_index": self._message_index, "item": item})
            out += self._ev("response.content_part.added", {**self._mbase(), "part": {
                "type": "output_text", "text": "", "annotations": [], "logprobs": []}})
        return out + self._ev("response.output_text.delta", {**self._mbase(), "delta": delta, "logprobs": []})

    def finish(self, r: Reply) -> bytes:
        p = r.parsed
        out = b""
        if self._reasoning_open:
            out += self.reasoning_done(p.reasoning or self.sent_reasoning)
        rest = self._rest(p.content, self.sent_text, "text")
        if rest:
            out += self.text(rest)
        placed: list[tuple[int, dict[str, Any]]] = []
        events: list[tuple[str, dict[str, Any]]] = []
        for item in output_items(r):
            kind = item["type"]
            if kind == "reasoning" and self._reasoning_index is not None:
                placed.append((self._reasoning_index, item))
            elif kind == "message" and self._message_index is not None:
                part = item["content"][0]
                out += self._ev("response.output_text.done", {**self._mbase(), "text": part["text"], "logprobs": []})
                out += self._ev("response.content_part.done", {**self._mbase(), "part": part})
                out += self._ev("response.output_item.done", {"output_index": self._message_index, "item": item})
                placed.append((self._message_index, item))
            else:
                item_events(item, self._next_index, events)
                placed.append((self._next_index, item))
                self._next_index += 1
        for name, data in events:
            out += self._ev(name, data)
        output = [item for _, item in sorted(placed, key=lambda x: x[0])]
        final = response_object(r, output, final_status(r))
        return out + self._ev("response.completed", {"response": final})
