"""Sampled ids → the reasoning and content a client may see now, as the tokens arrive.

:class:`Detokenizer` turns ids into text incrementally (a window of recent ids is decoded, and a delta that
ends inside a multi-byte character waits for the next token). :class:`Shaper` splits the text so far the way
:func:`polar_hpc.chat.parse.parse_reply` will split the whole reply, and releases only what that parse cannot
change: reasoning until ``</think>``; content up to where tool-call syntax begins (everything from there is
held until the reply is complete and parsed); never a trailing run of whitespace, nor a tail that could be
the start of a marker or of a stop string. The final parse is then reconciled with what was sent
(:func:`remainder`), so the client ends with exactly the reply the record holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from tokenizers import decoders

from polar_hpc.chat.parse import THINK_CLOSE, THINK_OPEN, ToolParser

TOOL_MARKERS = ("<tool_call>", "<function=")


class Decoder(Protocol):
    def decode(self, ids: Sequence[int]) -> str: ...


class Detokenizer:
    """Incremental decode: :meth:`feed` returns the text the new ids add (possibly ``""``: the last bytes are an
    unfinished character, held until the ids that finish it).

    With a byte-level BPE ``tokenizers`` tokenizer (Qwen, Llama 3, GPT-style: ``template.tokenizer``) the new ids
    are decoded on their own: their bytes start at a character boundary, so the pieces concatenate to the whole
    decode, and :attr:`text` (everything fed, nothing held) is kept so the reply need not be decoded again.
    Other ``tokenizers`` decoders (a leading space that depends on the position) go through ``DecodeStream``;
    anything else decodes a window of recent ids; :attr:`text` is None for both."""

    def __init__(self, template: Decoder) -> None:
        self._template = template
        tokenizer = getattr(template, "tokenizer", None)
        self._stream: Any = None
        self._pieces: list[str] | None = None
        self._held: list[int] = []
        if tokenizer is not None:
            self._tokenizer = tokenizer
            if isinstance(tokenizer.decoder, decoders.ByteLevel):
                self._pieces = []
            elif hasattr(decoders, "DecodeStream"):
                self._stream = decoders.DecodeStream(skip_special_tokens=False)
        self.fed = 0
        self._ids: list[int] = []
        self._prefix = 0
        self._read = 0

    @property
    def text(self) -> str | None:
        return None if self._pieces is None or self._held else "".join(self._pieces)

    def feed(self, ids: Sequence[int]) -> str:
        self.fed += len(ids)
        if not ids:
            return ""
        if self._pieces is not None:
            self._held += ids
            piece = self._template.decode(self._held)
            if piece.endswith("\ufffd"):  # unfinished (or a real U+FFFD: then the reply is decoded again)
                return ""
            self._held = []
            self._pieces.append(piece)
            return piece
        if self._stream is not None:
            return self._stream.step(self._tokenizer, list(ids)) or ""
        self._ids.extend(ids)
        before = self._template.decode(self._ids[self._prefix : self._read])
        now = self._template.decode(self._ids[self._prefix :])
        if len(now) <= len(before) or now.endswith("\ufffd"):
            return ""
        self._prefix, self._read = self._read, len(self._ids)
        return now[len(before) :]


_MARKER_MAX = max(len(m) for m in (THINK_CLOSE, *TOOL_MARKERS))


def _partial_tail(text: str, markers: Sequence[str]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of one of ``markers`` (all start with
    ``<``, so only the last ``<`` of the tail can begin one)."""
    if not markers:
        return 0
    i = text.rfind("<", max(0, len(text) - _MARKER_MAX))
    if i < 0:
        return 0
    tail = text[i:]
    return len(tail) if any(len(tail) < len(m) and m.startswith(tail) for m in markers) else 0


def _lead(text: str, start: int, chars: str) -> int:
    """``start`` moved past any of ``chars``."""
    n = len(text)
    while start < n and text[start] in chars:
        start += 1
    return start


class Shaper:
    """The visible split of the text so far, kept incrementally (each call scans only the new text).
    :meth:`feed` returns ``(reasoning_delta, reasoning_done, text_delta)``: ``reasoning_done`` is the whole
    reasoning once ``</think>`` has been seen (once), else None."""

    def __init__(self, parser: ToolParser, *, in_think: bool, stop: Sequence[str] = ()) -> None:
        self.parser = parser
        self.in_think = in_think
        self.text = ""
        self.sent_reasoning = ""
        self.sent_content = ""
        self.reasoning_closed = False
        self.held = False
        """Tool-call syntax has begun: nothing more is released until the reply is parsed."""
        self._stop_hold = max((len(x) for x in stop), default=1) - 1
        self._markers = TOOL_MARKERS if parser != "none" else ()
        self._mode = "wait"
        """Until the text shows whether it opens with ``<think>`` (written again by the model when in_think)."""
        self._r0 = 0
        """Where the reasoning body starts (after ``<think>``)."""
        self._c0 = 0
        """Where the content starts."""
        self._strip_c = False
        """The content follows ``</think>``: its leading newlines are not content (as ``split_reasoning``)."""
        self._scan = 0

    def feed(self, delta: str) -> tuple[str, str | None, str]:
        self.text += delta
        if self.held:
            return "", None, ""
        text = self.text
        if self._mode == "wait":
            stripped = text.lstrip()
            if stripped.startswith(THINK_OPEN):
                self._mode, self._r0 = "reason", len(text) - len(stripped) + len(THINK_OPEN)
                self._scan = self._r0
            elif THINK_OPEN.startswith(stripped):
                return "", None, ""
            else:
                self._mode = "reason" if self.in_think else "content"
        r_delta, done = "", None
        if self._mode == "reason":
            r_delta, done = self._reasoning(text)
        t_delta = self._content(text) if self._mode == "content" and not self.held else ""
        return r_delta, done, t_delta

    def _reasoning(self, text: str) -> tuple[str, str | None]:
        start = max(self._r0, self._scan - _MARKER_MAX)
        self._scan = len(text)
        close = text.find(THINK_CLOSE, start)
        if close >= 0:
            full = text[self._r0 : close].strip("\n")
            self._mode, self._c0, self._strip_c, self._scan = "content", close + len(THINK_CLOSE), True, 0
            self.reasoning_closed = True
            return self._release_reasoning(full, len(full)), full
        tool = min((k for k in (text.find(m, start) for m in TOOL_MARKERS) if k >= 0), default=-1)
        if tool >= 0:  # an unclosed reasoning ends where a tool call begins
            self.held = True
            end = tool
        else:
            end = len(text) - _partial_tail(text, (THINK_CLOSE, *TOOL_MARKERS))
        body0 = _lead(text, self._r0, "\n")
        while end > body0 and text[end - 1].isspace():
            end -= 1
        return self._release_reasoning(text[body0:end], end - body0), None

    def _release_reasoning(self, safe: str, n: int) -> str:
        if n <= len(self.sent_reasoning) or not safe.startswith(self.sent_reasoning):
            return ""
        delta = safe[len(self.sent_reasoning) :]
        self.sent_reasoning = safe
        return delta

    def _content(self, text: str) -> str:
        c0 = _lead(text, self._c0, "\n") if self._strip_c else self._c0
        start = max(c0, self._scan - _MARKER_MAX)
        self._scan = len(text)
        end = len(text)
        for m in self._markers:
            k = text.find(m, start)
            if 0 <= k < end:
                end = k
                self.held = True
        if not self.held:
            end -= max(_partial_tail(text, self._markers), min(self._stop_hold, end - c0))
        while end > c0 and text[end - 1].isspace():
            end -= 1
        sent = len(self.sent_content)
        if end - c0 <= sent or not text.startswith(self.sent_content, c0):
            return ""
        delta = text[c0 + sent : end]
        self.sent_content += delta
        return delta


def remainder(final: str, sent: str) -> str:
    """What is left to send of ``final`` after ``sent``; ``""`` (and the difference logged by the caller) when
    what was sent is not a prefix of the parsed reply."""
    return final[len(sent) :] if final.startswith(sent) else ""
