"""Render a model's own chat template and encode it to ids, without transformers.

Gives the same ids as ``AutoTokenizer.from_pretrained(dir).apply_chat_template(..., tokenize=True)``: the template
comes from ``chat_template.jinja`` / ``additional_chat_templates/*.jinja`` if present, else
``tokenizer_config.json["chat_template"]`` (a string or a list of ``{name, template}``); the named special tokens
(``bos_token``, ``eos_token``, ...) are passed to the template as strings; the text is encoded with
``tokenizers`` without adding special tokens (special/added tokens written in the text map to their ids).
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import jinja2
import msgspec
from tokenizers import Tokenizer

from polar_hpc.chat.bytelevel import ByteTable
from polar_hpc.chat.jinja import compile_template, kept
from polar_hpc.chat.messages import (
    plain,
    prepare_messages,
    template_messages,
    to_template_messages,
    to_template_tools,
)
from polar_hpc.chat.pretokenize import WordEncoder
from polar_hpc.errors import PolarError
from polar_hpc.wire.calls import ChatMessage, ToolSpec

__all__ = ["ChatTemplate", "TemplateError", "to_template_messages", "to_template_tools"]

SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "<|endoftext|>")
"""Tried in order for ``end_of_turn_id``; the eos token when none is in the vocabulary."""


SEGMENT_CACHE_CHARS = 16 * 1024 * 1024
"""Characters of text between added tokens whose ids :meth:`ChatTemplate.encode` keeps (LRU)."""
WORD_PATH_CHARS = 1 << 20
"""Longest piece of ASCII text :meth:`ChatTemplate.encode` encodes word by word (:mod:`polar_hpc.chat.pretokenize`)
rather than with ``tokenizers``. No crossover was found (``tools/bench/bench_pretokenize.py``, Qwen3, this 2-core
VM): the word path took 0.11-0.5 of ``tokenizers``' time for prose and code of 45 to 1,048,576 characters, cold
(after a 20 ms idle) and hot, and 0.75-0.9 for text of words never seen; the limit is the longest piece measured."""
RENDER_CACHE_BYTES = 64 * 1024 * 1024
"""Bytes of keys and ids of whole renders :meth:`ChatTemplate.cached_ids` keeps (LRU)."""
TOOL_FORMS = 64
"""Distinct tool lists whose template form :meth:`ChatTemplate.render_request` keeps (LRU)."""
IMPURE_GLOBALS = ("strftime_now", "lipsum")
"""Template globals whose output is not a function of the inputs: a template that uses one is never cached."""
_KEY = msgspec.msgpack.Encoder()


class TemplateError(PolarError, ValueError):
    """The chat template cannot render these inputs (a ``raise_exception`` in it, or bad input)."""


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _token_string(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])  # legacy AddedToken dict
    return None


def _load_templates(model_dir: Path, tokenizer_config: Mapping[str, Any]) -> str | dict[str, str]:
    templates: dict[str, str] = {}
    main = model_dir / "chat_template.jinja"
    if main.is_file():
        templates["default"] = main.read_text(encoding="utf-8")
    extra_dir = model_dir / "additional_chat_templates"
    if extra_dir.is_dir():
        for path in sorted(extra_dir.glob("*.jinja")):
            templates[path.stem] = path.read_text(encoding="utf-8")
    if templates:
        return templates["default"] if list(templates) == ["default"] else templates
    raw = tokenizer_config.get("chat_template")
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        return {str(t["name"]): str(t["template"]) for t in raw}
    raise ValueError(
        f"{model_dir}: no chat template (looked for chat_template.jinja, additional_chat_templates/*.jinja and "
        f"tokenizer_config.json 'chat_template')"
    )


def _eos_ids(value: Any) -> list[int]:
    if isinstance(value, int):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, int)]
    return []


class ChatTemplate:
    """A model's chat template + tokenizer. Immutable after construction; safe to share between threads."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        template: str | dict[str, str],
        special_tokens: dict[str, str],
        *,
        extra_stop_ids: Sequence[int] = (),
        source: str = "",
    ) -> None:
        self.tokenizer = tokenizer
        self.templates = template
        self.special_tokens: dict[str, str] = plain(dict(special_tokens))
        """The named special tokens as the template sees them (plain strings; the class is immutable)."""
        self.source = source
        eos = special_tokens.get("eos_token")
        eos_id = tokenizer.token_to_id(eos) if eos is not None else None
        if eos_id is None:
            raise ValueError(f"{source or 'tokenizer'}: eos token {eos!r} is not in the vocabulary")
        self.eos_token_id: int = eos_id
        self.end_of_turn_id: int = next(
            (i for i in map(tokenizer.token_to_id, END_OF_TURN_TOKENS) if i is not None), eos_id
        )
        stops = [self.end_of_turn_id, self.eos_token_id, *extra_stop_ids]
        self.stop_token_ids: list[int] = list(dict.fromkeys(stops))
        self._splitter, self._added_ids = _added_token_splitter(tokenizer)
        self._segments: OrderedDict[str, list[int]] = OrderedDict()
        self._segment_chars = 0
        self._segment_lock = threading.Lock()
        self._words = WordEncoder.of(tokenizer) if self._splitter is not None else None
        sources = [template] if isinstance(template, str) else list(template.values())
        self.pure = not any(name in source for source in sources for name in IMPURE_GLOBALS)
        """The render is a function of its inputs alone (no clock, no randomness): whole renders may be cached."""
        self._renders: OrderedDict[bytes, list[int]] = OrderedDict()
        self._render_bytes = 0
        self._tool_forms: OrderedDict[bytes, list[Any]] = OrderedDict()

    @classmethod
    def from_model_dir(cls, path: str | Path) -> ChatTemplate:
        """Load ``tokenizer.json``, ``tokenizer_config.json``, the chat template and stop ids of a model dir."""
        return _load_cached(str(Path(path).expanduser().resolve()))

    def template_for(self, tools: Sequence[Any] | None) -> str:
        if isinstance(self.templates, str):
            return self.templates
        if tools is not None and "tool_use" in self.templates:
            return self.templates["tool_use"]
        if "default" in self.templates:
            return self.templates["default"]
        raise TemplateError(f"{self.source}: several chat templates and no default: {sorted(self.templates)}")

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        **template_kwargs: Any,
    ) -> str:
        return self._render(prepare_messages(messages), plain(list(tools)) if tools is not None else None,
                            add_generation_prompt, template_kwargs)

    def render_request(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        add_generation_prompt: bool = True,
        **template_kwargs: Any,
    ) -> str:
        """:meth:`render` of a canonical request (``to_template_messages``, ``to_template_tools``; no tools: None).
        The tools' template form is kept per distinct tools (LRU, :data:`TOOL_FORMS`): a session sends the same
        tools on every call, and copying their JSON schemas costs about a millisecond for twenty tools after an
        idle spell. Renders share it (the sandbox lets no template change it), with its ``tojson`` texts
        (:class:`~polar_hpc.chat.jinja.KeptDict`)."""
        return self._render(template_messages(messages), self._tool_form(tools) if tools else None,
                            add_generation_prompt, template_kwargs)

    def _render(self, messages: Sequence[Mapping[str, Any]], tools: list[Any] | None, add_generation_prompt: bool,
                template_kwargs: Mapping[str, Any]) -> str:
        """Render ``messages`` as ``prepare_messages`` gives them, with ``tools`` already plain."""
        if not messages:
            raise TemplateError("cannot render an empty conversation (expected at least one message)")
        compiled = compile_template(self.template_for(tools))
        kwargs = {**self.special_tokens, **plain(template_kwargs)}
        try:
            return compiled.render(
                messages=messages,
                tools=tools,
                documents=kwargs.pop("documents", None),
                add_generation_prompt=add_generation_prompt,
                **kwargs,
            )
        except jinja2.exceptions.TemplateError as err:
            raise TemplateError(f"chat template of {self.source or 'model'} refused the input: {err}") from err

    def _tool_form(self, tools: Sequence[ToolSpec]) -> list[Any]:
        """``plain(to_template_tools(tools))`` with its dicts made ``KeptDict``, kept by the tools' MessagePack
        (which keeps apart everything a template could tell apart in tools decoded from JSON: ``0``, ``0.0`` and
        ``false`` are three keys)."""
        try:
            key = _KEY.encode(tools)
        except (TypeError, ValueError, OverflowError):
            return plain(to_template_tools(tools))  # type: ignore[no-any-return]
        form = self._tool_forms.get(key)
        if form is None:
            form = kept(plain(to_template_tools(tools)))
            with self._segment_lock:
                self._tool_forms[key] = form
                while len(self._tool_forms) > TOOL_FORMS:
                    self._tool_forms.popitem(last=False)
        else:
            with self._segment_lock:  # another thread may have evicted it meanwhile
                if key in self._tool_forms:
                    self._tool_forms.move_to_end(key, last=True)
        return form

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` with no special tokens added (tokens written in the text are matched).

        tokenizers cuts the text at added tokens before normalizing and pre-tokenizing, so the pieces between
        them encode independently: each piece's ids are kept (LRU, :data:`SEGMENT_CACHE_CHARS`), and a
        re-rendered history costs the encoding of its new messages only. Tokenizers where that cut is not
        exact (added tokens that strip whitespace, are normalized or single-word; truncation or padding set)
        encode the whole text every time. A new piece of ASCII text up to :data:`WORD_PATH_CHARS` long is
        encoded word by word where the tokenizer allows it (:class:`~polar_hpc.chat.pretokenize.WordEncoder`:
        the same ids in 40-80 µs rather than ≈200-235 µs for a new prompt's 45 characters after an idle spell).
        """
        if self._splitter is None:
            return self.tokenizer.encode(text, add_special_tokens=False).ids
        parts = self._splitter.split(text)
        ids: list[int] = []
        added = self._added_ids
        segments = self._segments
        words = self._words
        for i, part in enumerate(parts):
            if i % 2:
                ids.append(added[part])
            elif part:
                cached = segments.get(part)
                if cached is None:
                    if words is not None and len(part) <= WORD_PATH_CHARS and part.isascii():
                        cached = words.encode(part)
                    else:
                        cached = self.tokenizer.encode(part, add_special_tokens=False).ids
                    self._remember(part, cached)
                ids += cached
        return ids

    def _remember(self, part: str, ids: list[int]) -> None:
        size = len(part)
        if size > SEGMENT_CACHE_CHARS // 4:
            return
        with self._segment_lock:
            if part in self._segments:
                return
            self._segments[part] = ids
            self._segment_chars += size
            while self._segment_chars > SEGMENT_CACHE_CHARS:
                old, _ = self._segments.popitem(last=False)
                self._segment_chars -= len(old)

    def cached_ids(self, key: bytes, make: Callable[[], list[int]]) -> list[int]:
        """``make()``, the ids of one whole render, kept by ``key``: bytes the caller derives from everything the
        render reads (messages, tools, template arguments), so that equal keys render equal text. Shared by every
        session of this template (a task's samples start from one prompt; a retry repeats one); a template
        that is not :attr:`pure` renders every time. Returns a fresh list."""
        if not self.pure:
            return make()
        ids = self._renders.get(key)
        if ids is None:
            ids = make()
            size = len(key) + 8 * len(ids)
            if size <= RENDER_CACHE_BYTES // 4:
                with self._segment_lock:
                    if key not in self._renders:
                        self._renders[key] = ids
                        self._render_bytes += size
                        while self._render_bytes > RENDER_CACHE_BYTES:
                            old, old_ids = self._renders.popitem(last=False)
                            self._render_bytes -= len(old) + 8 * len(old_ids)
        else:
            with self._segment_lock:  # another thread may have evicted it meanwhile
                if key in self._renders:
                    self._renders.move_to_end(key, last=True)
        return list(ids)

    def render_ids(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        **template_kwargs: Any,
    ) -> list[int]:
        return self.encode(self.render(messages, tools, add_generation_prompt, **template_kwargs))

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` with special tokens kept, so that it re-encodes to the same tokens."""
        table = self.byte_table
        if table is not None:
            return table.decode(ids)
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=False))

    @cached_property
    def byte_table(self) -> ByteTable | None:
        """The bytes of every token, for a byte-level tokenizer (:mod:`polar_hpc.chat.bytelevel`): built at the
        first decode (about 0.2 s for a 150k vocabulary; a proxy builds it when it starts), so that loading a template
        stays cheap."""
        return ByteTable.of(self.tokenizer)

    def __repr__(self) -> str:
        return f"ChatTemplate({self.source!r}, eos={self.eos_token_id}, stop={self.stop_token_ids})"


def _added_token_splitter(tokenizer: Tokenizer) -> tuple[re.Pattern[str] | None, dict[str, int]]:
    """A pattern that cuts text at added tokens as tokenizers does, or None where the cut is not exact."""
    added = tokenizer.get_added_tokens_decoder()
    if (
        not added
        or tokenizer.truncation is not None
        or tokenizer.padding is not None
        or getattr(tokenizer, "encode_special_tokens", False)
        or any(t.lstrip or t.rstrip or t.single_word or t.normalized for t in added.values())
    ):
        return None, {}
    ids = {t.content: i for i, t in added.items() if t.content}
    if any(tokenizer.token_to_id(content) != i for content, i in ids.items()):
        return None, {}
    # longest first: tokenizers matches leftmost-longest, Python's alternation leftmost-first
    alternatives = sorted(ids, key=len, reverse=True)
    return re.compile("(" + "|".join(map(re.escape, alternatives)) + ")"), ids


@lru_cache(maxsize=8)
def _load_cached(model_dir_str: str) -> ChatTemplate:
    model_dir = Path(model_dir_str)
    tokenizer_file = model_dir / "tokenizer.json"
    if not tokenizer_file.is_file():
        raise FileNotFoundError(f"{model_dir}: no tokenizer.json (expected a HF model or tokenizer directory)")
    config = _read_json(model_dir / "tokenizer_config.json")
    special = {name: s for name in SPECIAL_TOKEN_NAMES if (s := _token_string(config.get(name))) is not None}
    extra_stops: list[int] = []
    for name in ("generation_config.json", "config.json"):
        extra_stops += _eos_ids(_read_json(model_dir / name).get("eos_token_id"))
    return ChatTemplate(
        Tokenizer.from_file(str(tokenizer_file)),
        _load_templates(model_dir, config),
        special,
        extra_stop_ids=extra_stops,
        source=str(model_dir),
    )
