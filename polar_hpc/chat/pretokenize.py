"""Encoding ASCII text with a byte-level BPE tokenizer word by word, in Python: a new prompt's text after an idle spell.

A new prompt's new text (``"user\\nWrite a long story about the number 17."``, between two added tokens) goes to
``tokenizers.Tokenizer.encode`` once: ≈200-235 µs on this project's 2-core VM after a 20 ms idle (the CPU caches are
the host's by then; 40-80 µs hot), most of it cold code: the call itself (``encode("")`` alone ≈77 µs cold) and the
pre-tokenizer's Oniguruma regex (≈170 µs cold). :class:`WordEncoder` does the same work with code the process has
just run: the tokenizer's own pre-tokenizing pattern, restated for ASCII text in the standard library's ``re``
(whose engine the chat template's added-token cut has just used; with the ``regex`` module, which reads the pattern
as written, the same loop cost ≈67 µs cold against ≈38 µs), splits the text into words; each word's ids come from a
dict, and only a word not seen before goes to the BPE model itself (``tokenizer.model.tokenize`` of its byte-level
form). Same ids, 40-80 µs cold (≈13 µs hot) for that text, and 0.1-0.5 of ``tokenizers``' time for longer prose and
code, hot or cold (its per-character cost is the larger one here); 0.8-0.9 for text of words never seen, each of
which goes to the model (``tools/bench/bench_pretokenize.py``).

It is exact only where every step is reproduced, so :meth:`WordEncoder.of` gives None for any other tokenizer:
- the pre-tokenizer is ``Sequence[Split(Regex(P), Isolated), ByteLevel(use_regex=False)]`` with P one of the
  patterns of :data:`ASCII_PATTERNS` (Qwen2/Qwen3, Llama 3), or ``ByteLevel(use_regex=True)`` alone (GPT-2's
  pattern, as SmolLM2), neither adding a prefix space; any other field or pre-tokenizer refuses;
- the normalizer is NFC or none (NFC leaves ASCII as it is); any other refuses;
- the model is a BPE without dropout, subword prefix or word suffix; the post-processor adds nothing without
  special tokens (none, ByteLevel, TemplateProcessing, Roberta, Bert, or a Sequence of them);
- and the restated pattern cuts a set of probe texts (every ASCII character, at every kind of edge) into the
  same words as the tokenizer's own pre-tokenizer, with the same byte-level forms.

The restatement holds for ASCII text only (``str.isascii()``; the caller checks): there ``\\p{L}`` is
``[A-Za-z]``, ``\\p{N}`` is ``[0-9]`` and Oniguruma's ``\\s`` is ``[\\t\\n\\x0b\\x0c\\r ]`` (Unicode White_Space;
not ``\\x1c``-``\\x1f``, which Python's ``str.isspace`` and ``re``'s Unicode ``\\s`` count as space); ``re.ASCII``
makes ``(?i:'s|...)`` fold ASCII letters only, and ``\\s+(?!\\S)`` at the end of a text succeeds in both engines.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tokenizers import Tokenizer, models

from polar_hpc.chat.bytelevel import byte_alphabet
from polar_hpc.log import get_logger

__all__ = ["ASCII_PATTERNS", "GPT2_PATTERN", "WORD_CACHE_WORDS", "WORD_CHARS", "WordEncoder"]

log = get_logger("chat.pretokenize")

_WS = r"\t\n\x0b\x0c\r "
"""Oniguruma's ``\\s`` on ASCII, inside a character class."""

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                 r"|\s+(?!\S)|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
"""The pattern of ``ByteLevel(use_regex=True)`` (``tokenizers``' ``pre_tokenizers/byte_level.rs``)."""

ASCII_PATTERNS: dict[str, str] = {
    QWEN2_PATTERN: (rf"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]| ?[^{_WS}A-Za-z0-9]+[\r\n]*"
                    rf"|[{_WS}]*[\r\n]+|[{_WS}]+(?![^{_WS}])|[{_WS}]+"),
    LLAMA3_PATTERN: (rf"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]{{1,3}}"
                     rf"| ?[^{_WS}A-Za-z0-9]+[\r\n]*|[{_WS}]*[\r\n]+|[{_WS}]+(?![^{_WS}])|[{_WS}]+"),
    GPT2_PATTERN: (rf"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^{_WS}A-Za-z0-9]+|[{_WS}]+(?![^{_WS}])"
                   rf"|[{_WS}]+"),
}
"""Each known pre-tokenizing pattern (as ``tokenizer.json`` writes it) → the same pattern for ASCII text in ``re``
(compiled with ``re.ASCII``). Every ASCII character matches one alternative, so the matches cover the text."""

WORD_CACHE_WORDS = 1 << 16
"""Words whose ids :class:`WordEncoder` keeps (a dict, emptied when full; 200-300 bytes a word, ≈20 MB at most)."""
WORD_CHARS = 64
"""Longer words (a long run of spaces or of ``=``) are not kept: they go to the model each time."""

_PROBES = (
    "".join(map(chr, range(128))),
    "".join(map(chr, reversed(range(128)))),
    "".join(f"{chr(c)}a{chr(c)}1{chr(c)} {chr(c)}\n" for c in range(128)),
    "It's 'S 'LL we'Ve I'M they'RE don't x'd 'T 're\r\n\r\n  \t\n \x0b\x0c\x1c\x1d\x1e\x1f end  ",
    "".join(f"x'{c}x 1'{c}1 '{c}" for c in ("s S t T re RE rE ve VE Ve m M ll LL lL d D x".split())),
    "def f(x):\n    return {'a': [1, 22, 333, 4444]}  # ok\n\n\n\tdone\t \n",
    "   ", "\n", " \n ", "a  ", "12345678901", "!!!\n\n", " ?!\r\n", "\x1f\x1c ",
)
"""Texts :meth:`WordEncoder.of` cuts both ways before it trusts a pattern."""

_POST_PROCESSORS = {"ByteLevel", "TemplateProcessing", "RobertaProcessing", "BertProcessing"}


def _state(component: Any) -> dict[str, Any] | None:
    """The JSON configuration of a tokenizer component (its own ``__getstate__``: ``to_str()`` of a whole
    150k-token tokenizer costs ≈0.2 s), None for no component, ``{}`` (which every check refuses) for one whose
    configuration cannot be read."""
    if component is None:
        return None
    try:
        state = json.loads(component.__getstate__())
    except Exception:  # tokenizers raises a bare Exception for a custom (Python) component
        return {}
    return state if isinstance(state, dict) else {}


def _byte_level(state: Any, *, use_regex: bool) -> bool:
    return (isinstance(state, dict) and set(state) == {"type", "add_prefix_space", "trim_offsets", "use_regex"}
            and state["type"] == "ByteLevel" and state["add_prefix_space"] is False
            and state["use_regex"] is use_regex)


def _source_pattern(pre: dict[str, Any] | None) -> str | None:
    """The pre-tokenizing pattern of a byte-level pre-tokenizer this module reproduces, or None."""
    if _byte_level(pre, use_regex=True):
        return GPT2_PATTERN
    if pre is None or pre.get("type") != "Sequence" or set(pre) != {"type", "pretokenizers"}:
        return None
    steps = pre["pretokenizers"]
    if not isinstance(steps, list) or len(steps) != 2 or not _byte_level(steps[1], use_regex=False):
        return None
    split = steps[0]
    if (not isinstance(split, dict) or set(split) != {"type", "pattern", "behavior", "invert"}
            or split["type"] != "Split" or split["behavior"] != "Isolated" or split["invert"] is not False
            or not isinstance(split["pattern"], dict) or list(split["pattern"]) != ["Regex"]):
        return None
    pattern = split["pattern"]["Regex"]
    return pattern if isinstance(pattern, str) else None


def _post_processor_adds_nothing(state: dict[str, Any] | None) -> bool:
    if state is None:
        return True
    if state.get("type") == "Sequence":
        steps = state.get("processors")
        return isinstance(steps, list) and all(isinstance(s, dict) and _post_processor_adds_nothing(s) for s in steps)
    return state.get("type") in _POST_PROCESSORS


class WordEncoder:
    """The ids of ASCII text, word by word (see the module's docstring). Safe to share between threads: the word
    dict's reads and writes are single operations."""

    def __init__(self, model: models.Model, pattern: str) -> None:
        self._model = model
        self._findall = re.compile(pattern, re.ASCII).findall
        alphabet = {b: c for c, b in byte_alphabet().items()}
        self._to_byte_level = str.maketrans({chr(b): alphabet[b] for b in range(128)})
        self._words: dict[str, list[int]] = {}

    @classmethod
    def of(cls, tokenizer: Tokenizer) -> WordEncoder | None:
        """An encoder giving ``tokenizer.encode(text, add_special_tokens=False).ids`` for ASCII text with no added
        tokens in it, or None where ``tokenizer`` is not one it reproduces exactly."""
        model = tokenizer.model
        if (type(model) is not models.BPE or model.dropout or model.continuing_subword_prefix
                or model.end_of_word_suffix or tokenizer.truncation is not None or tokenizer.padding is not None):
            return None
        if _state(tokenizer.normalizer) not in (None, {"type": "NFC"}):
            return None
        if not _post_processor_adds_nothing(_state(tokenizer.post_processor)):
            return None
        source = _source_pattern(_state(tokenizer.pre_tokenizer))
        if source is None or source not in ASCII_PATTERNS:
            return None
        encoder = cls(model, ASCII_PATTERNS[source])
        pre = tokenizer.pre_tokenizer
        for probe in _PROBES:
            if encoder.words(probe) != [word for word, _ in pre.pre_tokenize_str(probe)]:
                log.warning("pre-tokenizer pattern %r cuts %r otherwise than its ASCII form: no word fast path",
                            source, probe)
                return None
        return encoder

    def words(self, text: str) -> list[str]:
        """The byte-level forms of the words of ASCII ``text``, as the tokenizer's pre-tokenizer gives them."""
        return [word.translate(self._to_byte_level) for word in self._findall(text)]

    def encode(self, text: str) -> list[int]:
        """The ids of ASCII ``text`` (no added tokens in it); a fresh list."""
        ids: list[int] = []
        words = self._words
        for word in self._findall(text):
            known = words.get(word)
            if known is None:
                known = [t.id for t in self._model.tokenize(word.translate(self._to_byte_level))]
                if len(word) <= WORD_CHARS:
                    if len(words) >= WORD_CACHE_WORDS:
                        words.clear()
                    words[word] = known
            ids += known
        return ids
