"""Our parser against the cases of SGLang's and vLLM's own parser tests (transcribed as data in ``conformance/``).

Each case runs through ``parse_reply`` and through the live path (the :class:`Shaper` fed the peer's deltas, one
character at a time, and random cuts, then reconciled with the parse as the proxy does). Where ours differs from a
peer by choice, the case names the ``docs/parsing.md`` section that says why, and the peer's answer must really
differ from ours (a stale choice fails).

Normalizations (docs/parsing.md, "Whitespace"): content and reasoning are compared without surrounding blanks
(ours strips them as Qwen's chat template does when it renders a turn); an absent content is "".
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from polar_hpc.chat.live_text import Shaper, remainder
from polar_hpc.chat.parse import ParsedReply, parse_reply
from polar_hpc.wire.calls import ToolSpec
from tests.unit.proxy.conformance import ours, reasoning, sglang_tools, vllm_hermes, vllm_qwen3coder
from tests.unit.proxy.conformance.tools import TOOLSETS

DOC = Path(__file__).resolve().parents[3] / "docs" / "parsing.md"
SUITES = [(vllm_qwen3coder, "qwen3_coder"), (vllm_hermes, "qwen"), (reasoning, "none"), (sglang_tools, "qwen3_coder"),
          (ours, "qwen3_coder")]
CASES = [(m.__name__.rsplit(".", 1)[-1], c, c.get("parser", parser)) for m, parser in SUITES for c in m.CASES]
PEER = [c for c in CASES if c[0] != "ours"]


def _text(case: dict[str, Any]) -> str:
    return case["text"] if "text" in case else "".join(case["chunks"])


def _parse(case: dict[str, Any], parser: str) -> ParsedReply:
    tools = [ToolSpec(name=n, parameters=p) for n, p in TOOLSETS[case.get("tools", "none")].items()]
    return parse_reply(_text(case), parser, tools, in_think=case.get("in_think", False))  # type: ignore[arg-type]


def _calls(p: ParsedReply) -> list[list[Any]]:
    return [[c.name, json.loads(c.arguments)] for c in p.tool_calls]


def _norm(s: str | None) -> str:
    return (s or "").strip()


@pytest.mark.parametrize("suite,case,parser", CASES, ids=[f"{s}:{c['id']}" for s, c, _ in CASES])
def test_case(suite: str, case: dict[str, Any], parser: str) -> None:
    p = _parse(case, parser)
    if "calls" in case:
        assert _calls(p) == case["calls"], p
    if "raw_arguments" in case:
        assert [c.arguments for c in p.tool_calls] == case["raw_arguments"]
    if "content" in case:
        assert _norm(p.content) == _norm(case["content"]), p
    if "reasoning" in case:
        assert _norm(p.reasoning) == _norm(case["reasoning"]), p
        assert (p.reasoning is None) == (case["reasoning"] is None), p
    assert bool(p.parse_error) == case.get("error", False), p.parse_error
    if case.get("choice"):
        assert re.search(rf"\{{#{re.escape(case['choice'])}\}}", DOC.read_text()), case["choice"]
        peer = case["peer"]
        ours_view = {"calls": _calls(p), "content": p.content or None}
        assert any(peer[k] != ours_view[k] for k in peer), "the peer agrees now: drop the choice"


@pytest.mark.parametrize("suite,case,parser", CASES, ids=[f"{s}:{c['id']}" for s, c, _ in CASES])
def test_case_live(suite: str, case: dict[str, Any], parser: str) -> None:
    """The live path: what was streamed is a prefix of the parse, and the reconciled end is the parse."""
    final = _parse(case, parser)
    text = _text(case)
    rng = random.Random(len(text))
    longest = 9 if len(text) < 5000 else 5000  # a 100 KB value is cut in larger pieces (CI time)
    cuts = [case.get("chunks") or [text], list(text) if len(text) < 5000 else [text]]
    for _ in range(3):
        pieces, i = [], 0
        while i < len(text):
            n = rng.randint(1, longest)
            pieces.append(text[i : i + n])
            i += n
        cuts.append(pieces)
    for pieces in cuts:
        sh = Shaper(parser, in_think=case.get("in_think", False))  # type: ignore[arg-type]
        for piece in pieces:
            sh.feed(piece)
            assert (final.reasoning or "").startswith(sh.sent_reasoning)
            assert final.content.startswith(sh.sent_content), (sh.sent_content, final.content)
        assert sh.sent_content + remainder(final.content, sh.sent_content) == final.content
        if final.tool_calls:
            assert "<tool_call>" not in sh.sent_content and "<function=" not in sh.sent_content


def test_counts() -> None:
    """The figures the closing report gives: peer cases, agreed and differing by a recorded choice."""
    differing = [c for _, c, _ in PEER if c.get("choice")]
    assert len(PEER) >= 150, len(PEER)
    assert len(differing) < len(PEER) // 5
