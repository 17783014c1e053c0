"""Provider-shaped SSE events for a reply that is still being sampled.

A writer is made before the first token (it knows the completion id, model and prompt size) and turns each
released piece into that provider's events; :meth:`Writer.finish` gets the parsed reply (the same ``Reply``
the JSON and the synthesized streams are built from) and sends what is left: the rest of the text, tool calls
in the provider's shape, the finish reason and usage. Keep-alives are events each provider's official SDKs
accept: Anthropic ``ping`` events (after ``message_start``), OpenAI Chat chunks with an empty delta, OpenAI
Responses ``response.in_progress`` events, and for Google a blank line (its JS SDK reads ``data:`` lines only:
an SSE comment stalls its parser, while whitespace before a ``data:`` line is skipped).
"""

from __future__ import annotations

from typing import Any

from polar_hpc.proxy.live.text import remainder
from polar_hpc.proxy.normalize.common import ReplyOptions
from polar_hpc.proxy.normalize.openai_responses import encrypt_reasoning
from polar_hpc.proxy.parse import ParsedReply
from polar_hpc.proxy.respond import anthropic as r_anthropic
from polar_hpc.proxy.respond import google as r_google
from polar_hpc.proxy.respond import openai_chat as r_chat
from polar_hpc.proxy.respond import openai_responses as r_responses
from polar_hpc.proxy.respond.common import ENC, GOOGLE_KEEPALIVE, Reply, arguments_object, signature, sse
from polar_hpc.wire.records import Provider


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

    def _rest(self, final: str | None, sent: str, what: str) -> str:
        final = final or ""
        if sent and not final.startswith(sent):
            self.mismatch = f"streamed {what} is not a prefix of the parsed {what}"
        return remainder(final, sent)


class AnthropicWriter(Writer):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._index = -1
        self._open: str | None = None

    def start(self) -> bytes:
        msg = r_anthropic._message(self._stub(), [], done=False)
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
        delta = {"stop_reason": r_anthropic.stop_reason(r), "stop_sequence": r.stop_sequence}
        out += sse("message_delta", {"type": "message_delta", "delta": delta,
                                     "usage": {"output_tokens": r.output_tokens}})
        return out + sse("message_stop", {"type": "message_stop"})


class ChatWriter(Writer):
    def _chunk(self, delta: dict[str, Any]) -> bytes:
        return r_chat.chunk(self.id, self.created, self.model, delta)

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
        out = b""
        rest_r = self._rest(p.reasoning, self.sent_reasoning, "reasoning")
        if rest_r:
            out += self.reasoning(rest_r)
        rest = self._rest(p.content, self.sent_text, "text")
        if rest:
            out += self.text(rest)
        if p.tool_calls:
            out += self._chunk({"tool_calls": r_chat._tool_calls(r, indexed=True)})
        return out + r_chat.tail(r)


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
        resp = r_responses._response(self._stub(), [], "in_progress")
        return self._ev("response.created", {"response": resp}) + self._ev("response.in_progress", {"response": resp})

    def keepalive(self) -> bytes:
        return self._ev("response.in_progress", {"response": r_responses._response(self._stub(), [], "in_progress")})

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
        for item in r_responses._items(r):
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
                r_responses._item_events(item, self._next_index, events)
                placed.append((self._next_index, item))
                self._next_index += 1
        for name, data in events:
            out += self._ev(name, data)
        output = [item for _, item in sorted(placed, key=lambda x: x[0])]
        final = r_responses._response(r, output, r_responses._final_status(r))
        return out + self._ev("response.completed", {"response": final})


class GoogleWriter(Writer):
    def _chunk(self, parts: list[dict[str, Any]]) -> bytes:
        return sse(None, r_google.body(self.id, self.model, parts))

    def keepalive(self) -> bytes:
        return GOOGLE_KEEPALIVE

    def _reasoning(self, delta: str) -> bytes:
        return self._chunk([{"text": delta, "thought": True}]) if self.options.include_thoughts else b""

    def _text(self, delta: str) -> bytes:
        return self._chunk([{"text": delta}])

    def finish(self, r: Reply) -> bytes:
        p = r.parsed
        out = b""
        rest_r = self._rest(p.reasoning, self.sent_reasoning, "reasoning")
        if rest_r:
            out += self.reasoning(rest_r)
        rest = self._rest(p.content, self.sent_text, "text")
        self.sent_text += rest
        body = r_google.body(r.id, r.model, r_google.parts(r, rest, thoughts=False), r_google._finish(r),
                             r_google.usage(r))
        return out + sse(None, body)


_WRITERS: dict[str, type[Writer]] = {
    "anthropic": AnthropicWriter,
    "openai_chat": ChatWriter,
    "openai_responses": ResponsesWriter,
    "google": GoogleWriter,
}


def make_writer(provider: Provider, completion_id: str, model: str, created: int, prompt_tokens: int,
                options: ReplyOptions) -> Writer:
    return _WRITERS[provider](completion_id, model, created, prompt_tokens, options)

