"""Whole canonical renders are kept per template and shared by sessions (``ChatTemplate.cached_ids``): the ids are
those of a fresh render for every conversation of the corpus, a change anywhere in what the template reads is
another entry, and a template that reads the clock is never cached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from polar_hpc.chat.template import ChatTemplate
from polar_hpc.providers import provider_api
from polar_hpc.providers.detect import Route
from polar_hpc.providers.request import Normalized
from polar_hpc.proxy.prompt import PromptBuilder
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, ToolSpec
from tests.fixtures.conversations import CORPUS


def normalize(route: Route, body: dict[str, Any]) -> Normalized:
    return provider_api(route.provider).normalize(route, body)


def _req(messages: list[ChatMessage], tools: list[ToolSpec] | None = None, **kwargs: object) -> CanonicalRequest:
    return CanonicalRequest(messages=messages, tools=tools or [], template_kwargs=dict(kwargs))


def _fresh(t: ChatTemplate, req: CanonicalRequest) -> list[int]:
    from polar_hpc.chat.template import to_template_messages, to_template_tools

    tools = to_template_tools(req.tools) if req.tools else None
    return t.encode(t.render(to_template_messages(req.messages), tools, True, **req.template_kwargs))


def test_cached_ids_equal_fresh_renders_across_sessions(qwen3_template: ChatTemplate) -> None:
    a, b = PromptBuilder(qwen3_template), PromptBuilder(qwen3_template)
    for conv in CORPUS:
        body = {"model": "m", "messages": conv.messages, **({"tools": conv.tools} if conv.tools else {})}
        req = msgspec.structs.replace(normalize(Route("openai_chat", "generate"), body).canonical,
                                      template_kwargs=dict(conv.kwargs))
        first = a.build(req).ids
        again = b.build(msgspec.structs.replace(req)).ids  # another session, an equal request
        assert first == again == _fresh(qwen3_template, req), conv.name
        assert first is not again


def test_what_the_template_reads_is_in_the_key(qwen3_template: ChatTemplate) -> None:
    pb = PromptBuilder(qwen3_template)
    msgs = [ChatMessage(role="user", content="hi")]
    tool = ToolSpec(name="bash", description="run", parameters={"type": "object", "properties": {}})
    variants = [_req(msgs), _req(msgs, enable_thinking=False), _req(msgs, [tool]),
                _req([ChatMessage(role="user", content="hi ")]), _req([ChatMessage(role="system", content="hi")])]
    got = [pb.build(r).ids for r in variants]
    assert got == [_fresh(qwen3_template, r) for r in variants]
    assert len({tuple(g) for g in got}) == len(got)


def test_a_template_that_reads_the_clock_is_never_cached(tmp_path: Path, qwen3_tokenizer_dir: Path) -> None:
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((qwen3_tokenizer_dir / name).read_bytes())
    (tmp_path / "chat_template.jinja").write_text(
        "{% for m in messages %}{{ m.content }}{% endfor %} {{ strftime_now('%H:%M:%S.%f') }}")
    t = ChatTemplate.from_model_dir(tmp_path)
    assert not t.pure
    pb = PromptBuilder(t)
    req = _req([ChatMessage(role="user", content="hi")])
    pb.build(req)
    assert not t._renders


def test_kept_tool_forms_render_as_fresh_copies(qwen3_template: ChatTemplate) -> None:
    from polar_hpc.chat.template import to_template_messages, to_template_tools

    t = qwen3_template
    convs = [c for c in CORPUS if c.tools]
    assert convs
    for conv in convs:
        body = {"model": "m", "messages": conv.messages, "tools": conv.tools}
        req = normalize(Route("openai_chat", "generate"), body).canonical
        fresh = t.render(to_template_messages(req.messages), to_template_tools(req.tools), True, **conv.kwargs)
        assert t.render_request(req.messages, req.tools, True, **conv.kwargs) == fresh, conv.name  # made
        assert t.render_request(req.messages, req.tools, True, **conv.kwargs) == fresh, conv.name  # kept
    msgs = [ChatMessage(role="user", content="hi")]
    variants = [[ToolSpec(name="f", parameters={"type": "object", "default": v})] for v in (0, 0.0, False, "0", None)]
    got = [t.render_request(msgs, tools) for tools in variants]  # values a template tells apart: other forms
    assert got == [t.render(to_template_messages(msgs), to_template_tools(tools)) for tools in variants]
    assert len(set(got)) == len(got)


def test_kept_tool_forms_under_a_template_that_prints_them_its_own_way(tmp_path: Path,
                                                                        qwen3_tokenizer_dir: Path) -> None:
    from polar_hpc.chat.template import to_template_messages, to_template_tools

    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((qwen3_tokenizer_dir / name).read_bytes())
    (tmp_path / "chat_template.jinja").write_text(
        "{% for t in tools %}{{ t | tojson(indent=4) }}|{{ t.function.parameters | tojson(sort_keys=true) }}|"
        "{{ t['function'].name }}|{{ t.function.parameters.properties.keys() | list }}{% endfor %}"
        "{% for m in messages %}{{ m.content }}{% endfor %}")
    t = ChatTemplate.from_model_dir(tmp_path)
    msgs = [ChatMessage(role="user", content="hi")]
    schema = {"type": "object", "properties": {"b": {"type": "integer", "minimum": 0}, "a": {"enum": ["é", 1.5]}}}
    tools = [ToolSpec(name="f", description="d", parameters=schema), ToolSpec(name="g", parameters={"properties": {}})]
    fresh = t.render(to_template_messages(msgs), to_template_tools(tools))
    assert '"minimum": 0' in fresh and '"é"' in fresh
    assert t.render_request(msgs, tools) == t.render_request(msgs, tools) == fresh
