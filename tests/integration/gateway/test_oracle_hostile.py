"""The oracle carries hostile content through every harness: ``polar-hpc probe`` on a task whose gold patch holds
the tool-call formats' own markup (``</tool_call>``, ``</parameter>``, ``<function=``), the heredoc's tag and
``EOF`` lines, ``$``, backticks, backslashes, quotes, CRLF, tabs and trailing blanks, non-ASCII and no final newline
(tests/fixtures/hostile_task). Before issue 26 the oracle's apply call did not parse back, went to the harness as
plain text, and every harness ended the session graded 0.

One harness per wire format and action shape (CI time): the shell agent and OpenHands (OpenAI chat; OpenHands'
tools carry a ``security_risk`` field), codex (Responses), claude_code (Anthropic), gemini_cli (Google) and
mini_swe_agent (text actions). pi, qwen_code (gemini_cli's fork, with its shell filters), opencode and cline send
OpenAI chat with a shell tool as the shell agent does; each solved this task when measured (docs/harnesses.md). When
a harness pin changes, run ``polar-hpc probe HARNESS --task tests/fixtures/hostile_task/hostile.jsonl``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.fixtures.oracle_probe import CLI, probe

pytestmark = [pytest.mark.slow]
TASK = Path(__file__).resolve().parents[2] / "fixtures" / "hostile_task" / "hostile.jsonl"
SHAPES = ("shell", "openhands", "codex", "claude_code", "gemini_cli", "mini_swe_agent")


@pytest.mark.parametrize("harness", [h if CLI[h] is None else pytest.param(h, marks=pytest.mark.harness)
                                     for h in SHAPES])
def test_hostile_patch_is_applied_by_each_wire_format(harness: str, reference_server: Any, tmp_path: Path,
                                                   no_leaked_children: None) -> None:
    row = probe(harness, reference_server.url, tmp_path / "probe", "--task", str(TASK))
    why = msgspec.json.encode(row).decode()
    assert row.status == "completed" and row.returncode == 0, why
    assert row.reward == 1.0, why
