"""Sampled ids → the reasoning and content a client may see now, as the tokens arrive.

:class:`Detokenizer` turns ids into text incrementally (a window of recent ids is decoded, and a delta that
ends inside a multi-byte character waits for the next token). :class:`Shaper` splits the text so far the way
:func:`polar_hpc.proxy.parse.parse_reply` will split the whole reply, and releases only what that parse cannot
change: reasoning until ``</think>``; content up to where tool-call syntax begins (everything from there is
held until the reply is complete and parsed); never a trailing run of whitespace, nor a tail that could be
the start of a marker or of a stop string. The final parse is then reconciled with what was sent
(:func:`remainder`), so the client ends with exactly the reply the record holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from polar_hpc.proxy.parse import THINK_CLOSE, THINK_OPEN, ToolParser

TOOL_MARKERS = ("<tool_call>", "<function=")


class Decoder(Protocol):
    def decode(self, ids: Sequence[int]) -> str: ...


class Detokenizer:
    """Incremental decode: :meth:`feed` returns the text the new ids add (possibly ``""``)."""

    def __init__(self, template: Decoder) -> None:
        self._template = template
        self._ids: list[int] = []
        self._prefix = 0
        self._read = 0

    def feed(self, ids: Sequence[int]) -> str:
        self._ids.extend(ids)
        before = self._template.decode(self._ids[self._prefix : self._read])
        now = self._template.decode(self._ids[self._prefix :])
        if len(now) <= len(before) or now.endswith("\ufffd"):
            return ""
        self._prefix, self._read = self._read, len(self._ids)
        return now[len(before) :]


def _partial_tail(text: str, markers: Sequence[str]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of one of ``markers``."""
    best = 0
    for m in markers:
        for k in range(min(len(m) - 1, len(text)), best, -1):
            if text.endswith(m[:k]):
                best = k
                break
    return best


class Shaper:
    """The visible split of the text so far. :meth:`feed` returns ``(reasoning_delta, reasoning_done, text_delta)``:
    ``reasoning_done`` is the whole reasoning once ``</think>`` has been seen (once), else None."""

    def __init__(self, parser: ToolParser, *, in_think: bool, stop: Sequence[str] = ()) -> None:
        self.parser = parser
        self.in_think = in_think
        self.text = ""
        self.sent_reasoning = ""
        self.sent_content = ""
        self.reasoning_closed = False
        self.held = False
        """Tool-call syntax has begun: nothing more is released until the reply is parsed."""
        self._stop_hold = max((len(s) for s in stop), default=1) - 1
        self._markers = TOOL_MARKERS if parser != "none" else ()

    def feed(self, delta: str) -> tuple[str, str | None, str]:
        self.text += delta
        if self.held:
            return "", None, ""
        reasoning_safe, reasoning_done, rest = self._split()
        r_delta = ""
        if reasoning_safe is not None and len(reasoning_safe) > len(self.sent_reasoning):
            if reasoning_safe.startswith(self.sent_reasoning):
                r_delta = reasoning_safe[len(self.sent_reasoning) :]
                self.sent_reasoning = reasoning_safe
        done = None
        if reasoning_done is not None and not self.reasoning_closed:
            self.reasoning_closed = True
            done = reasoning_done
        t_delta = ""
        if rest is not None:
            cut = len(rest)
            for m in self._markers:
                k = rest.find(m)
                if 0 <= k < cut:
                    cut = k
                    self.held = True
            safe = rest[:cut]
            if not self.held:
                safe = safe[: len(safe) - max(_partial_tail(safe, self._markers), min(self._stop_hold, len(safe)))]
            safe = safe.rstrip()
            if len(safe) > len(self.sent_content) and safe.startswith(self.sent_content):
                t_delta = safe[len(self.sent_content) :]
                self.sent_content = safe
        return r_delta, done, t_delta

    def _split(self) -> tuple[str | None, str | None, str | None]:
        """(reasoning released so far, the whole reasoning once closed, content region or None while reasoning)."""
        text = self.text
        body = text
        if not self.in_think:
            stripped = text.lstrip()
            if stripped.startswith(THINK_OPEN):
                body = stripped[len(THINK_OPEN) :]
            elif THINK_OPEN.startswith(stripped):
                return None, None, None  # could still become "<think>"
            else:
                return None, None, text
        end = body.find(THINK_CLOSE)
        if end >= 0:
            reasoning = body[:end].strip("\n")
            return reasoning, reasoning, body[end + len(THINK_CLOSE) :].lstrip("\n")
        starts = [k for k in (body.find(m) for m in TOOL_MARKERS) if k >= 0]
        if starts:  # an unclosed reasoning ends where a tool call begins
            self.held = True
            return body[: min(starts)].strip("\n"), None, None
        safe = body[: len(body) - _partial_tail(body, (THINK_CLOSE, *TOOL_MARKERS))]
        return safe.lstrip("\n").rstrip(), None, None


def remainder(final: str, sent: str) -> str:
    """What is left to send of ``final`` after ``sent``; ``""`` (and the difference logged by the caller) when
    what was sent is not a prefix of the parsed reply."""
    return final[len(sent) :] if final.startswith(sent) else ""
