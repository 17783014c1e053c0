"""The live Shaper releases only what the final parse keeps: for every way of cutting a reply into deltas,
what it sent is a prefix of the parsed reasoning and content, and tool-call syntax is never sent as text when
it parses. The Detokenizer's pieces add up to the whole decode."""

from __future__ import annotations

import random

import pytest

from polar_hpc.chat.live_text import Detokenizer, Shaper
from polar_hpc.chat.parse import parse_reply

TEXTS = [
    "Hello there,  friend.\n\n",
    "<think>\nLet me think.\n\n</think>\n\nThe answer is 4.",
    '<think>\nI should list files.\n</think>\n\nLet me look.\n<tool_call>\n'
    '{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>',
    'Sure. <tool_call>\n{"name": "bash", "arguments": {"command": </tool_call>',
    "<think>unclosed reasoning then a call <tool_call>\n{\"name\": \"x\", \"arguments\": {}}\n</tool_call>",
    "a < b and c <tool but not a call <toolbox>",
    "<thinking is not think> text",
    "<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>",
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("parser", ["qwen", "qwen3_coder", "none"])
def test_sent_is_a_prefix_of_the_parse(text: str, parser: str) -> None:
    final = parse_reply(text, parser)  # type: ignore[arg-type]
    rng = random.Random(0)
    for trial in range(30):
        sh = Shaper(parser, in_think=False)  # type: ignore[arg-type]
        pos = 0
        while pos < len(text):
            step = 1 if trial == 0 else rng.randint(1, 6)
            sh.feed(text[pos : pos + step])
            pos += step
            assert (final.reasoning or "").startswith(sh.sent_reasoning)
            assert final.content.startswith(sh.sent_content), (sh.sent_content, final.content)
            if final.tool_calls:
                assert "<tool_call>" not in sh.sent_content and "<function=" not in sh.sent_content


def test_in_think_prompt() -> None:
    text = "still thinking\n</think>\n\nDone."
    sh = Shaper("qwen", in_think=True)
    for ch in text:
        sh.feed(ch)
    final = parse_reply(text, "qwen", in_think=True)
    assert sh.sent_reasoning == final.reasoning == "still thinking"
    assert sh.sent_content == final.content == "Done."


def test_detokenizer_pieces_add_up(qwen3_template) -> None:  # type: ignore[no-untyped-def]
    text = "Grüße, 世界! 🤖 emoji and <tool_call> text\n\n  spaced"
    ids = qwen3_template.encode(text)
    d = Detokenizer(qwen3_template)
    assert "".join(d.feed([i]) for i in ids) == qwen3_template.decode(ids) == text


def test_detokenizer_text_is_the_whole_decode_or_none(qwen3_template) -> None:  # type: ignore[no-untyped-def]
    """The streamed text the proxy keeps instead of decoding the reply again: for random id sequences fed in
    random batches (multi-byte characters cut between tokens, special tokens, ids of any kind) it equals the
    whole decode whenever it is given, and it is withheld when the last bytes are an unfinished character."""
    rng = random.Random(7)
    pool = qwen3_template.encode("Grüße, 世界! 🤖 <think>x</think> <tool_call>{}</tool_call> \n\n a") + [151643, 151667]
    given = 0
    for _ in range(1000):
        kinds = (lambda: rng.choice(pool), lambda: rng.randrange(256), lambda: rng.randrange(150000))  # 256: bytes
        ids = [rng.choices(kinds, (6, 1, 3))[0]() for _ in range(rng.randrange(1, 60))]
        d = Detokenizer(qwen3_template)
        sent, i = "", 0
        while i < len(ids):
            n = rng.randrange(1, 9)
            sent += d.feed(ids[i : i + n])
            i += n
        assert d.fed == len(ids)
        whole = qwen3_template.decode(ids)
        assert whole.startswith(sent), ids
        if d.text is not None:
            given += 1
            assert d.text == sent == whole, ids
    assert given > 500
    rare = qwen3_template.encode("ok 𓀀")  # the last character is three byte-level tokens
    cut = Detokenizer(qwen3_template)
    cut.feed(rare[:-1])
    assert cut.text is None and qwen3_template.decode(rare[:-1]).endswith("\ufffd")
    cut.feed(rare[-1:])
    assert cut.text == "ok 𓀀"
