"""ChatTemplate (jinja2 + tokenizers) gives the same ids as transformers' apply_chat_template."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from polar_hpc.chat.template import ChatTemplate, TemplateError, to_template_messages, to_template_tools
from polar_hpc.wire.calls import ChatMessage, ToolCall
from tests.fixtures.conversations import (
    CANONICAL,
    CANONICAL_TOOLS,
    CORPUS,
    KWARG_VARIANTS,
    Conversation,
    agent_conversation,
)

MODELS = ["qwen3-tokenizer", "tiny-qwen3", "smollm2"]


@pytest.fixture(scope="module")
def model_dirs(qwen3_tokenizer_dir: Path, tiny_qwen3_dir: Path, smollm2_dir: Path) -> dict[str, Path]:
    return {"qwen3-tokenizer": qwen3_tokenizer_dir, "tiny-qwen3": tiny_qwen3_dir, "smollm2": smollm2_dir}


@pytest.fixture(scope="module")
def hf_tokenizers(model_dirs: dict[str, Path]) -> dict[str, Any]:
    from transformers import AutoTokenizer

    return {name: AutoTokenizer.from_pretrained(str(d)) for name, d in model_dirs.items()}


def hf_ids(tok: Any, messages: list[dict[str, Any]], tools: Any, add_generation_prompt: bool, **kw: Any) -> list[int]:
    out = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=add_generation_prompt, tokenize=True,
                                  **kw)
    return list(out["input_ids"])


def hf_text(tok: Any, messages: list[dict[str, Any]], tools: Any, add_generation_prompt: bool, **kw: Any) -> str:
    return str(tok.apply_chat_template(messages, tools=tools, add_generation_prompt=add_generation_prompt,
                                       tokenize=False, **kw))


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("conv", CORPUS, ids=[c.name for c in CORPUS])
def test_corpus_ids_equal_transformers(model: str, conv: Conversation, model_dirs: dict[str, Path],
                                       hf_tokenizers: dict[str, Any]) -> None:
    ct = ChatTemplate.from_model_dir(model_dirs[model])
    tok = hf_tokenizers[model]
    for extra in KWARG_VARIANTS:
        kw = {**conv.kwargs, **extra}
        for agp in (True, False):
            want_text = hf_text(tok, conv.messages, conv.tools, agp, **kw)
            assert ct.render(conv.messages, conv.tools, agp, **kw) == want_text, (kw, agp)
            assert ct.render_ids(conv.messages, conv.tools, agp, **kw) == hf_ids(tok, conv.messages, conv.tools,
                                                                                 agp, **kw), (kw, agp)


@pytest.mark.parametrize("model", MODELS)
def test_long_agent_conversation_equal(model: str, model_dirs: dict[str, Path], hf_tokenizers: dict[str, Any]) -> None:
    messages, tools = agent_conversation(200)
    ct = ChatTemplate.from_model_dir(model_dirs[model])
    ids = ct.render_ids(messages, tools, True)
    assert ids == hf_ids(hf_tokenizers[model], messages, tools, True)
    assert len(ids) > 20_000 or model == "smollm2"


def test_qwen3_known_renders(qwen3_tokenizer_dir: Path) -> None:
    ct = ChatTemplate.from_model_dir(qwen3_tokenizer_dir)
    assert ct.encode("<|im_start|>user\nhi<|im_end|>\n") == [151644, 872, 198, 6023, 151645, 198]
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "4", "reasoning_content": "easy"}]
    assert ct.render(msgs, add_generation_prompt=False).endswith(
        "<|im_start|>assistant\n<think>\neasy\n</think>\n\n4<|im_end|>\n")
    assert ct.render(msgs[:1], enable_thinking=False).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert ct.render(msgs[:1]).endswith("<|im_start|>assistant\n")
    # transformers' tojson: no HTML escaping, non-ASCII kept
    tools = [{"type": "function", "function": {"name": "f", "description": "a <b> & 'c' é"}}]
    assert '"description": "a <b> & \'c\' é"' in ct.render(msgs[:1], tools)


def test_stop_and_special_ids(qwen3_tokenizer_dir: Path, tiny_qwen3_dir: Path, smollm2_dir: Path) -> None:
    q = ChatTemplate.from_model_dir(qwen3_tokenizer_dir)
    assert (q.eos_token_id, q.end_of_turn_id, q.stop_token_ids) == (151645, 151645, [151645])
    tiny = ChatTemplate.from_model_dir(tiny_qwen3_dir)
    assert tiny.stop_token_ids == [151645, 151643]  # generation_config.json, as real Qwen3 checkpoints
    smol = ChatTemplate.from_model_dir(smollm2_dir)
    assert (smol.eos_token_id, smol.end_of_turn_id, smol.stop_token_ids) == (2, 2, [2])
    assert ChatTemplate.from_model_dir(qwen3_tokenizer_dir) is q  # cached per directory


@pytest.mark.parametrize("model", MODELS)
def test_decode_round_trip(model: str, model_dirs: dict[str, Path]) -> None:
    ct = ChatTemplate.from_model_dir(model_dirs[model])
    conv = next(c for c in CORPUS if c.name == "unicode")
    ids = ct.render_ids(conv.messages, conv.tools)
    assert ct.encode(ct.decode(ids)) == ids  # text itself may differ: the Qwen3 normalizer applies NFC
    plain = next(c for c in CORPUS if c.name == "tool_call_and_result")
    assert ct.decode(ct.render_ids(plain.messages, plain.tools)) == ct.render(plain.messages, plain.tools)


@pytest.mark.parametrize("model", MODELS)
def test_canonical_conversion_matches_openai_dicts(model: str, model_dirs: dict[str, Path],
                                                  hf_tokenizers: dict[str, Any]) -> None:
    messages = to_template_messages(CANONICAL)
    tools = to_template_tools(CANONICAL_TOOLS)
    ct = ChatTemplate.from_model_dir(model_dirs[model])
    for agp in (True, False):
        assert ct.render_ids(messages, tools, agp) == hf_ids(hf_tokenizers[model], messages, tools, agp)


def test_to_template_messages_shapes() -> None:
    messages = to_template_messages(CANONICAL)
    call = messages[2]["tool_calls"][0]
    assert call == {"id": "c1", "type": "function",
                    "function": {"name": "bash", "arguments": {"command": "pytest -q", "extra": [1, 2.0]}}}
    assert messages[2]["reasoning_content"] == "run pytest"
    assert [c["function"]["arguments"] for c in messages[4]["tool_calls"]] == [{"command": "ls"}, "{not json", "[1, 2]"]
    assert messages[3] == {"role": "tool", "content": "3 passed", "tool_call_id": "c1", "name": "bash"}
    assert "reasoning_content" not in messages[1] and "tool_calls" not in messages[1]
    tools = to_template_tools(CANONICAL_TOOLS)
    assert tools[1] == {"type": "function", "function": {"name": "noop", "parameters": {}}}
    assert tools[0]["function"]["description"] == "Run a shell command."


def _canonical(m: dict[str, Any]) -> ChatMessage:
    calls = [ToolCall(id=c["id"], name=c["function"]["name"], arguments=json.dumps(c["function"]["arguments"]))
             for c in m.get("tool_calls", [])]
    return ChatMessage(role=m["role"], content=m.get("content") or "", reasoning_content=m.get("reasoning_content"),
                       tool_calls=calls, tool_call_id=m.get("tool_call_id"), name=m.get("name"))


def test_template_messages_are_the_prepared_dicts_in_one_pass() -> None:
    from polar_hpc.chat.messages import prepare_messages, template_messages

    agent, _ = agent_conversation(60, seed=3)
    convs = [CANONICAL, [ChatMessage(role="assistant", content="", reasoning_content="")],
             [_canonical(m) for m in agent], *([_canonical(m) for m in c.messages] for c in CORPUS)]
    for msgs in convs:
        want = prepare_messages(to_template_messages(msgs))
        assert [list(d.items()) for d in template_messages(msgs)] == [list(d.items()) for d in want]  # key order too
    assert template_messages(CANONICAL)[2]["thinking"] == "run pytest"


def test_qwen3_tool_call_rendering_from_canonical(qwen3_tokenizer_dir: Path) -> None:
    text = ChatTemplate.from_model_dir(qwen3_tokenizer_dir).render(to_template_messages(CANONICAL), None, False)
    assert ('<tool_call>\n{"name": "bash", "arguments": {"command": "pytest -q", "extra": [1, 2.0]}}\n</tool_call>'
            in text)
    assert '<tool_call>\n{"name": "noop", "arguments": {not json}\n</tool_call>' in text


def _model_dir_with(tmp_path: Path, qwen3_tokenizer_dir: Path, config_updates: dict[str, Any],
                    files: dict[str, str]) -> Path:
    d = tmp_path / "model"
    d.mkdir(parents=True)
    (d / "tokenizer.json").symlink_to(qwen3_tokenizer_dir / "tokenizer.json")
    config = json.loads((qwen3_tokenizer_dir / "tokenizer_config.json").read_text())
    config.update(config_updates)
    (d / "tokenizer_config.json").write_text(json.dumps(config))
    for rel, text in files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
    return d


def test_chat_template_jinja_overrides_config(tmp_path: Path, qwen3_tokenizer_dir: Path) -> None:
    from transformers import AutoTokenizer

    d = _model_dir_with(tmp_path, qwen3_tokenizer_dir, {"chat_template": "CONFIG {{ messages[0].content }}"},
                        {"chat_template.jinja": "FILE[{{ eos_token }}|{{ bos_token }}] {{ messages[0].content }}"})
    ct = ChatTemplate.from_model_dir(d)
    msgs = [{"role": "user", "content": "x"}]
    assert ct.render(msgs) == "FILE[<|im_end|>|] x"
    assert ct.render_ids(msgs) == hf_ids(AutoTokenizer.from_pretrained(str(d)), msgs, None, True)


def test_named_templates_pick_tool_use(tmp_path: Path, qwen3_tokenizer_dir: Path) -> None:
    from transformers import AutoTokenizer

    templates = [{"name": "default", "template": "D {{ messages|length }}"},
                 {"name": "tool_use", "template": "T {{ tools|length }}"}]
    d = _model_dir_with(tmp_path, qwen3_tokenizer_dir, {"chat_template": templates}, {})
    ct, hf = ChatTemplate.from_model_dir(d), AutoTokenizer.from_pretrained(str(d))
    msgs = [{"role": "user", "content": "x"}]
    assert ct.render(msgs) == "D 1" == hf_text(hf, msgs, None, True)
    assert ct.render(msgs, [{"name": "a"}]) == "T 1" == hf_text(hf, msgs, [{"name": "a"}], True)


def test_template_features_and_errors(tmp_path: Path, qwen3_tokenizer_dir: Path) -> None:
    source = (
        "{% set ns = namespace(n=0) %}{% for m in messages %}{% if m.role == 'bad' %}"
        "{{ raise_exception('bad role at ' ~ loop.index0) }}{% endif %}{% if loop.index > 2 %}{% break %}{% endif %}"
        "{% set ns.n = ns.n + 1 %}{% generation %}[{{ m.content }}]{% endgeneration %}{% endfor %}"
        "{{ ns.n }} {{ dict(a=1)|tojson }} {{ strftime_now('%Y')|length }}"
    )
    d = _model_dir_with(tmp_path, qwen3_tokenizer_dir, {}, {"chat_template.jinja": source})
    ct = ChatTemplate.from_model_dir(d)
    msgs = [{"role": "user", "content": c} for c in "abcd"]
    assert ct.render(msgs) == '[a][b]2 {"a": 1} 4'
    with pytest.raises(TemplateError, match="bad role at 1"):
        ct.render([{"role": "user", "content": "a"}, {"role": "bad", "content": "b"}])
    with pytest.raises(TemplateError, match="empty conversation"):
        ct.render([])
    bad_ns = _model_dir_with(tmp_path / "ns", qwen3_tokenizer_dir, {},
                             {"chat_template.jinja": "{% set ns = namespace(_x=1) %}"})
    with pytest.raises(Exception, match="underscore"):
        ChatTemplate.from_model_dir(bad_ns).render(msgs)


def test_missing_files_say_what_was_expected(tmp_path: Path, qwen3_tokenizer_dir: Path) -> None:
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        ChatTemplate.from_model_dir(tmp_path)
    d = _model_dir_with(tmp_path, qwen3_tokenizer_dir, {"chat_template": None}, {})
    with pytest.raises(ValueError, match="no chat template"):
        ChatTemplate.from_model_dir(d)


def test_whitespace_control_matches_transformers(tmp_path: Path, qwen3_tokenizer_dir: Path) -> None:
    from transformers import AutoTokenizer

    source = ("{% for m in messages %}\n    {% if m.role == 'user' %}\n  U: {{ m.content }}\n    {% endif %}\n"
              "{% endfor %}\n")
    d = _model_dir_with(tmp_path, qwen3_tokenizer_dir, {}, {"chat_template.jinja": source})
    msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    assert ChatTemplate.from_model_dir(d).render(msgs) == hf_text(AutoTokenizer.from_pretrained(str(d)),
                                                                  msgs, None, True)


@pytest.mark.parametrize("model", MODELS)
def test_segment_cached_encode_equals_whole_text_encode(model: str, model_dirs: dict[str, Path]) -> None:
    """encode() cuts at added tokens and keeps each piece's ids; cold and warm, it equals one whole encode."""
    import random

    template = ChatTemplate(*_parts(model_dirs[model]))
    assert template._splitter is not None
    added = [t.content for t in template.tokenizer.get_added_tokens_decoder().values()]
    pieces = [*added, "", " ", "\n", "\n\n", "  x", "hello", " world", "é", "e\u0301", "\u0301", "<", ">", "|", "<|",
              "im_", "think", "</", "tool_call", "12 345", "'s", "   ", "\t", "日本語", "🙂", "{\"a\": 1}", "end|>"]
    rng = random.Random(7)
    texts = ["", "plain", *added, *(a + b for a in added for b in added[:5])]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(400)]
    for text in texts:
        whole = template.tokenizer.encode(text, add_special_tokens=False).ids
        assert template.encode(text) == whole, repr(text)  # cold or partly cached
        assert template.encode(text) == whole, repr(text)  # all pieces cached


def test_encode_without_exact_cut_encodes_whole_text(tmp_path: Path, tiny_qwen3_dir: Path) -> None:
    """An added token that strips whitespace changes its neighbours: no piece cache, the whole text encoded."""
    data = json.loads((tiny_qwen3_dir / "tokenizer.json").read_text())
    data["added_tokens"][0]["lstrip"] = True
    special = data["added_tokens"][0]["content"]
    for name in ("tokenizer_config.json", "chat_template.jinja", "generation_config.json", "config.json"):
        if (tiny_qwen3_dir / name).is_file():
            (tmp_path / name).write_text((tiny_qwen3_dir / name).read_text())
    (tmp_path / "tokenizer.json").write_text(json.dumps(data))
    template = ChatTemplate.from_model_dir(tmp_path)
    assert template._splitter is None
    text = f"a   {special} b"
    assert template.encode(text) == template.tokenizer.encode(text, add_special_tokens=False).ids
    assert template.encode(text) != template.encode("a   ") + template.encode(f"{special} b")


def _parts(model_dir: Path) -> tuple[Any, ...]:
    """A fresh ChatTemplate's arguments (from_model_dir shares one instance, and its cache, per directory)."""
    shared = ChatTemplate.from_model_dir(model_dir)
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(model_dir / "tokenizer.json")), shared.templates, shared.special_tokens
