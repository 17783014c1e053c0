"""The oracle carries any content: its forced tool call parses back to exactly the command it means, for every
harness's shell tool and both tool-call formats, and the command applies the patch for real (git in a temp repo).

Hostile content: the formats' own markup, heredoc tag and EOF lines, ``$``, backticks, backslashes, quotes, CRLF,
tabs and trailing blanks, non-ASCII, no trailing newline, binary hunks, 150 KB patches; every SWE gold patch this
machine has (the fixture rows, the offline task set when built). Property tests (hypothesis, bounded) draw
arguments and patches from the same alphabet.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polar_hpc.chat.parse import parse_reply
from polar_hpc.policy.oracle import OraclePolicy, parses_back
from polar_hpc.policy.render import tool_calls_text
from polar_hpc.policy.script import (
    HEREDOC_TAG,
    OracleError,
    OracleScript,
    apply_commands,
    plain_text,
    turns,
)
from polar_hpc.policy.tools import pick_tool
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, ToolCall
from tests.fixtures.shell_tools import SHELLS

PARSERS = ("qwen", "qwen3_coder")
ROWS = Path(__file__).resolve().parents[2] / "fixtures" / "swe_rows"
OFFLINE = Path.home() / ".cache" / "polar-hpc" / "image-build" / "offline-swe" / "tasks.jsonl"
MARKUP = ["<tool_call>", "</tool_call>", "<function=bash>", "</function>", "<parameter=command>", "</parameter>",
          "<parameter=description>", "<think>", "</think>", HEREDOC_TAG, "EOF", "$HOME", "$(id)", "`id`", "\\", "\\n",
          "'", '"', "\r\n", "\t", "  ", "Grüße 世界 🤖", "{", "}", "[", "]"]
HOSTILE_LINES = ['    "</tool_call>",', "</parameter>", "<parameter=description>", "<function=bash>", "</function>",
                 "<tool_call>", HEREDOC_TAG, "EOF", "echo $HOME $(id) `whoami` \\$ \\\\ 'single' \"double\"",
                 "crlf line\r", "\ttab then trailing blanks   ", "Grüße, 世界! 🤖", "</think>", "last line, no newline"]
HOSTILE = "\n".join(HOSTILE_LINES)


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=repo, input=stdin, env=env, check=True, capture_output=True).stdout


def _repo(path: Path, files: dict[str, bytes]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q")
    for name, data in files.items():
        (path / name).write_bytes(data)
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "base", "--allow-empty")
    return path


def make_patch(tmp: Path, before: dict[str, bytes], after: dict[str, bytes]) -> str:
    """A real ``git diff`` (binary hunks included) from ``before`` to ``after``."""
    repo = _repo(tmp / "make", before)
    for name, data in after.items():
        (repo / name).write_bytes(data)
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--cached", "--binary").decode()


def _request(spec: Any, done: int) -> CanonicalRequest:
    msgs = [ChatMessage(role="user", content="fix it")]
    for i in range(done):
        msgs += [ChatMessage(role="assistant", tool_calls=[ToolCall(id=f"c{i}", name=spec.name, arguments="{}")]),
                 ChatMessage(role="tool", content="ok", tool_call_id=f"c{i}")]
    return CanonicalRequest(messages=msgs, tools=[spec])


def apply_calls(script: OracleScript, harness: str, parser: str) -> list[str]:
    """The commands of the apply turns as the harness gets them: the forced text parsed back."""
    spec = SHELLS[harness]
    policy = OraclePolicy(script, None, parser)  # type: ignore[arg-type]  # forced_text needs no template
    out = []
    for step, turn in enumerate(turns(script, parallel=False)):
        if turn.label != "apply":
            continue
        text = policy.forced_text(_request(spec, step), b"{}", "openai_chat")
        assert text is not None
        parsed = parse_reply(text, parser, [spec])  # type: ignore[arg-type]
        assert parsed.parse_error is None and parsed.content == "" and len(parsed.tool_calls) == 1, parsed
        args = json.loads(parsed.tool_calls[0].arguments)
        value = args[pick_tool([spec]).param]  # type: ignore[union-attr]
        out.append(value[-1] if isinstance(value, list) else value)  # an argv, or a list of one command
    return out


def run_in(repo: Path, commands: list[str]) -> None:
    for cmd in commands:
        subprocess.run(["bash", "-c", cmd], cwd=repo, check=True, capture_output=True)


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("harness", list(SHELLS))
def test_hostile_patch_applies_through_every_harness_tool(tmp_path: Path, harness: str, parser: str) -> None:
    before = {"hostile.txt": b"old\n", "blob.bin": bytes(range(256))}
    after = {"hostile.txt": HOSTILE.encode(), "blob.bin": bytes(reversed(range(256))) * 3}
    patch = make_patch(tmp_path, before, after)
    assert "GIT binary patch" in patch and "</parameter>" in patch
    commands = apply_calls(OracleScript(solution_patch=patch, task="hostile-demo"), harness, parser)
    assert all(plain_text(c) for c in commands)  # what the harnesses' shell tools refuse goes encoded
    repo = _repo(tmp_path / "apply", before)
    run_in(repo, commands)
    assert (repo / "hostile.txt").read_bytes() == HOSTILE.encode()
    assert (repo / "blob.bin").read_bytes() == after["blob.bin"]


@pytest.mark.parametrize("parser", PARSERS)
def test_large_patch_goes_in_pieces_and_applies(tmp_path: Path, parser: str) -> None:
    big = "".join(f"line {i} {'x' * (i % 70)} $HOME `id` </parameter>\n" for i in range(2500)).encode()
    patch = make_patch(tmp_path, {"big.txt": b""}, {"big.txt": big})
    assert len(patch) > 150_000
    commands = apply_calls(OracleScript(solution_patch=patch), "claude_code", parser)
    assert len(commands) >= 3 and all(len(c) < 128 * 1024 for c in commands)
    repo = _repo(tmp_path / "apply", {"big.txt": b""})
    run_in(repo, commands)
    assert (repo / "big.txt").read_bytes() == big


@pytest.mark.parametrize("text,plain", [("a\tb\n", True), ("Grüße 世界\n", True), ("a\r\n", False), ("$(id)", False),
                                        ("`id`", False), ("diff <(a) >(b)", False), ("$HOME ${X}", True),
                                        ("\x1b[31m", False), ("zero\u200bwidth", False)])
def test_plain_text_is_what_shell_tools_take_literally(text: str, plain: bool) -> None:
    assert plain_text(text) is plain
    commands = apply_commands(OracleScript(solution_commands=[f"printf %s '{text}'"]))
    literal = f"printf %s '{text}'" if "\n" not in text else f"set -e\nprintf %s '{text}'"  # one line: as it is
    assert (commands == [literal]) is plain and all(plain_text(c) for c in commands)


def test_a_call_the_format_cannot_carry_fails_the_session_naming_the_task() -> None:
    script = OracleScript(solution_commands=["true"], verify="echo '\n</parameter>\n</function>'", task="t-42")
    policy = OraclePolicy(script, None, "qwen3_coder")  # type: ignore[arg-type]
    verify_step = [t.label for t in turns(script, parallel=False)].index("verify")
    with pytest.raises(OracleError, match="task t-42: the oracle's verify tool call does not parse back"):
        policy.forced_text(_request(SHELLS["pi"], verify_step), b"{}", "openai_chat")


def _gold_patches() -> list[tuple[str, str]]:
    found = []
    for path in sorted(ROWS.glob("*.jsonl")):
        found += [(f"{path.stem}:{r['instance_id']}", r["patch"]) for r in map(json.loads, path.open())]
    if OFFLINE.exists():
        for row in map(json.loads, OFFLINE.open()):  # the offline set's rows (``polar-hpc tasks build-offline``)
            patch = row.get("solution_patch") or (row.get("metadata") or {}).get("solution_patch")
            if patch:
                found.append((f"offline:{row.get('instance_id') or row.get('task_id')}", patch))
    return found


GOLD = _gold_patches()


@pytest.mark.parametrize("name,patch", GOLD, ids=[g[0] for g in GOLD])
def test_gold_patches_round_trip_every_harness_and_format(name: str, patch: str) -> None:
    for harness in SHELLS:
        for parser in PARSERS:
            (command,) = apply_calls(OracleScript(solution_patch=patch, task=name), harness, parser)
            assert command == turns(OracleScript(solution_patch=patch), parallel=False)[1].commands[0]


markup_text = st.lists(st.one_of(st.sampled_from(MARKUP), st.text(max_size=8)), max_size=12).map("".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command=markup_text, description=markup_text)
def test_property_json_format_carries_any_arguments(command: str, description: str) -> None:
    calls = [("Bash", {"command": command, "description": description, "timeout": 120000})]
    assert parses_back(tool_calls_text(calls, "qwen"), calls, "qwen", [SHELLS["claude_code"]]) is None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command=markup_text, description=markup_text)
def test_property_xml_format_carries_what_has_no_parameter_tags(command: str, description: str) -> None:
    """Qwen3-coder XML carries any value literally but one holding ``<parameter=`` / ``</parameter>`` (which the
    oracle sends encoded instead); for those, the oracle's check catches every value that does not survive."""
    calls = [("Bash", {"command": command, "description": description, "timeout": 120000})]
    why = parses_back(tool_calls_text(calls, "qwen3_coder"), calls, "qwen3_coder", [SHELLS["claude_code"]])
    if not any(t in command + description for t in ("<parameter=", "</parameter>")):
        assert why is None


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(lines=st.lists(markup_text, min_size=1, max_size=6), parser=st.sampled_from(PARSERS))
def test_property_random_patches_apply_through_the_oracle(tmp_path_factory: Any, lines: list[str], parser: str) -> None:
    tmp = tmp_path_factory.mktemp("p")
    new = "\n".join(lines).encode()
    patch = make_patch(tmp, {"f.txt": b"base\n"}, {"f.txt": new})
    if not patch:
        return
    repo = _repo(tmp / "apply", {"f.txt": b"base\n"})
    run_in(repo, apply_calls(OracleScript(solution_patch=patch), "opencode", parser))
    assert (repo / "f.txt").read_bytes() == new
