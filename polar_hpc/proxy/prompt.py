"""Prompt construction per session: canonical re-rendering, or drift-free continuation of held ids.

``canonical`` renders the whole history every time, exactly as the chat template does.
``continuation`` recognises a request whose messages are an earlier request of the same session plus that
request's reply (compared at message level, tolerant of what clients drop on echo) and builds its prompt as

    held prompt ids ‖ sampled ids [‖ end-of-turn if the reply was cut] ‖ render(what follows the reply)

so no earlier token is ever re-tokenized and templates that rewrite history (Qwen3 strips old ``<think>``) keep
the chain intact. Only the suffix is rendered and encoded: the cost of a request is that of its new messages.

The suffix is found by rendering a small window (system message, last user query, the reply, the new messages)
twice, with and without what follows the reply, and cutting the full render right after the reply's
end-of-turn marker. Encoding starts right after a special token, so the suffix ids equal the canonical ids.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol, get_args

import msgspec

from polar_hpc.config.run import RenderMode
from polar_hpc.log import get_logger
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, ToolCall, ToolSpec

log = get_logger("proxy.prompt")
_KEY = msgspec.msgpack.Encoder()
"""Render keys: MessagePack keeps apart what JSON would not (int and str keys, bytes, non-finite floats)."""


class TemplateLike(Protocol):
    """The part of ``polar_hpc.chat.template.ChatTemplate`` prompt construction uses."""

    @property
    def end_of_turn_id(self) -> int | None: ...

    def render_request(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                       add_generation_prompt: bool = True, **template_kwargs: Any) -> str: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def cached_ids(self, key: bytes, make: Callable[[], list[int]]) -> list[int]: ...


class PromptBuild(msgspec.Struct, kw_only=True):
    ids: list[int]
    mode: RenderMode
    """The mode that actually built the ids (continuation falls back to canonical when nothing matches)."""
    divergence_tokens: int = 0
    """Tokens after the longest common prefix with a canonical render; -1 = not measured."""
    held_tokens: int = 0
    """Tokens reused verbatim from the held prompt and sampled ids."""
    rendered_tokens: int = 0
    """Tokens produced by encoding rendered text for this request."""
    parent_index: int | None = None
    """Which earlier observed completion (arrival order) this prompt continues."""


class _Held(msgspec.Struct, kw_only=True):
    index: int
    messages: list[ChatMessage]
    tools: list[ToolSpec]
    template_kwargs: dict[str, Any]
    ids: list[int]
    """prompt ids ‖ sampled ids ‖ closing end-of-turn when the reply did not end with one."""
    response: ChatMessage


def _args_equal(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return a.strip() == b.strip()


def _calls_equal(a: list[ToolCall], b: list[ToolCall]) -> bool:
    return len(a) == len(b) and all(x.name == y.name and _args_equal(x.arguments, y.arguments)
                                    for x, y in zip(a, b, strict=True))


def messages_match(a: ChatMessage, b: ChatMessage) -> bool:
    """Same message as far as the conversation goes: reasoning and tool-call ids may be dropped on echo."""
    if a == b:
        return True
    if a.role != b.role or a.content.strip() != b.content.strip():
        return False
    if a.role == "assistant":
        return _calls_equal(a.tool_calls, b.tool_calls)
    if a.role == "tool":
        return a.name == b.name or a.name is None or b.name is None
    return a.name == b.name


def _prefix_match(msgs: list[ChatMessage], held: list[ChatMessage]) -> bool:
    if msgs[: len(held)] == held:
        return True
    return len(msgs) >= len(held) and all(
        messages_match(x, y) for x, y in zip(msgs[: len(held)], held, strict=True))


def _common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    import numpy as np

    n = min(len(a), len(b))
    if n == 0:
        return 0
    x = np.asarray(a[:n], dtype=np.int64)
    y = np.asarray(b[:n], dtype=np.int64)
    diff = np.flatnonzero(x != y)
    return int(diff[0]) if diff.size else n


def divergence(a: Sequence[int], b: Sequence[int]) -> int:
    """Tokens after the longest common prefix, counted on the longer side (0 = identical)."""
    return max(len(a), len(b)) - _common_prefix_len(a, b)


def _common_prefix_text(a: str, b: str) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n
    while lo < hi:  # binary search on slices: C-speed compares, O(n log n) worst case on short windows
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class PromptBuilder:
    """Builds the prompt ids of each request of one session; ``observe`` each completion afterwards."""

    def __init__(self, template: TemplateLike, mode: RenderMode = "canonical", *,
                 measure_divergence: bool = False, max_held: int = 256) -> None:
        if mode not in get_args(RenderMode):
            raise ValueError(f"render mode must be 'canonical' or 'continuation', got {mode!r}")
        self.template = template
        self.mode: RenderMode = mode
        self.measure_divergence = measure_divergence
        self.max_held = max_held
        self._held: dict[int, list[_Held]] = {}
        """Held completions by the number of messages of their request (the reply's position)."""
        self._count = 0
        self._eot_text: str | None = None

    # -- rendering helpers -------------------------------------------------------------------------
    def _render(self, messages: list[ChatMessage], tools: list[ToolSpec], kwargs: dict[str, Any],
                add_generation_prompt: bool) -> str:
        return self.template.render_request(messages, tools, add_generation_prompt=add_generation_prompt, **kwargs)

    def canonical_ids(self, req: CanonicalRequest) -> list[int]:
        def make() -> list[int]:
            return self.template.encode(self._render(req.messages, req.tools, req.template_kwargs, True))

        try:  # everything the render reads of the request, in one encoding (Structs encode field by field)
            key = _KEY.encode((req.messages, req.tools, req.template_kwargs))
        except (TypeError, ValueError, OverflowError):
            return make()
        return self.template.cached_ids(key, make)

    @property
    def eot_text(self) -> str:
        if self._eot_text is None:
            eot = self.template.end_of_turn_id
            if eot is None:
                raise ValueError("continuation mode needs the template's end_of_turn_id; the template has none")
            self._eot_text = self.template.decode([eot])
        return self._eot_text

    # -- public API --------------------------------------------------------------------------------
    def build(self, req: CanonicalRequest) -> PromptBuild:
        if self.mode == "continuation":
            found = self._find(req)
            if found is not None:
                held, k = found
                suffix = self.template.encode(self._suffix_text(req, k))
                ids = held.ids + suffix
                div = divergence(ids, self.canonical_ids(req)) if self.measure_divergence else -1
                return PromptBuild(ids=ids, mode="continuation", divergence_tokens=div, held_tokens=len(held.ids),
                                   rendered_tokens=len(suffix), parent_index=held.index)
        ids = self.canonical_ids(req)
        return PromptBuild(ids=ids, mode="canonical", divergence_tokens=0, rendered_tokens=len(ids))

    def observe(self, req: CanonicalRequest, prompt_ids: Sequence[int], output_ids: Sequence[int],
                finish_reason: str, response: ChatMessage) -> None:
        """Hold one completion so a later request that echoes it can continue its ids."""
        index = self._count
        self._count += 1
        if self.mode != "continuation":
            return
        ids = list(prompt_ids) + list(output_ids)
        eot = self.template.end_of_turn_id
        if eot is not None and (not output_ids or int(output_ids[-1]) != eot):
            ids.append(eot)  # a reply cut by length (or a stop string) gets its turn closed
        held = _Held(index=index, messages=list(req.messages), tools=list(req.tools),
                     template_kwargs=dict(req.template_kwargs), ids=ids, response=response)
        self._held.setdefault(len(req.messages), []).append(held)
        if index >= self.max_held:
            self._evict()

    def _evict(self) -> None:
        oldest = self._count - self.max_held
        for k in list(self._held):
            kept = [h for h in self._held[k] if h.index >= oldest]
            if kept:
                self._held[k] = kept
            else:
                del self._held[k]

    # -- continuation ------------------------------------------------------------------------------
    def _find(self, req: CanonicalRequest) -> tuple[_Held, int] | None:
        msgs = req.messages
        for k in range(len(msgs) - 1, -1, -1):
            if msgs[k].role != "assistant":
                continue
            for held in reversed(self._held.get(k, ())):
                if held.tools != req.tools or held.template_kwargs != req.template_kwargs:
                    continue
                if messages_match(msgs[k], held.response) and _prefix_match(msgs, held.messages):
                    return held, k
        return None

    def _window(self, msgs: list[ChatMessage], k: int) -> list[ChatMessage]:
        """The few messages that give the reply and what follows it their context."""
        head: list[ChatMessage] = []
        if msgs and msgs[0].role == "system" and k > 0:
            head.append(msgs[0])
        for j in range(k - 1, len(head) - 1, -1):
            m = msgs[j]
            if m.role == "user" and not (m.content.startswith("<tool_response>")
                                         and m.content.endswith("</tool_response>")):
                head.append(m)
                break
        return head

    def _suffix_text(self, req: CanonicalRequest, k: int) -> str:
        msgs = req.messages
        head = self._window(msgs, k)
        kw = req.template_kwargs
        upto = self._render([*head, msgs[k]], req.tools, kw, False)
        full = self._render([*head, *msgs[k:]], req.tools, kw, True)
        eot = self.eot_text
        reply_end = upto.rfind(eot)
        if reply_end < 0:
            raise ValueError(f"continuation: the rendered reply has no end-of-turn marker {eot!r}; "
                             "use render='canonical' for this template")
        common = _common_prefix_text(upto, full)
        if common >= reply_end + len(eot):
            cut = reply_end + len(eot)
        else:  # the template renders the reply differently once more follows (Qwen3 strips <think>)
            pos = full.find(eot, min(common, reply_end))
            if pos < 0:
                raise ValueError(f"continuation: cannot find the reply's end-of-turn {eot!r} in the render")
            cut = pos + len(eot)
        return full[cut:]
