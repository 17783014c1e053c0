"""The oracle's text actions (mini-swe-agent's format): each reply is read back by mini-swe-agent's own parser
(``parse_regex_actions`` with its config's ``action_regex``, run in the installed package's venv) and the
command it yields does what the oracle's command does when run as mini-swe-agent runs it (``/bin/sh -c``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from polar_hpc.config.run import AgentSpec
from polar_hpc.harness import get_adapter
from polar_hpc.harness.mini_swe_agent import FINISH, TEXT_FENCE
from polar_hpc.harness.toolchain import venv_dir
from polar_hpc.policy.oracle import OraclePolicy
from polar_hpc.policy.script import OracleScript, Turn, turns
from polar_hpc.policy.text_actions import action_text, checked_action_text, join_commands
from polar_hpc.wire.actions import ActionFormat
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage

TEXT = get_adapter("mini_swe_agent").action_format(AgentSpec(harness="mini_swe_agent", settings={"mode": "text"}))
PATCH = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
# mini-swe-agent's parser, with the regex of its text-based model config, as its agent calls it; the default is
# read from the config class's source (importing that module imports LiteLLM: ~4 s of CPU)
PARSE = """
import ast, importlib.util, json, sys
from minisweagent.exceptions import FormatError
from minisweagent.models.utils.actions_text import parse_regex_actions
source = open(importlib.util.find_spec("minisweagent.models.litellm_textbased_model").origin).read()
config = next(n for n in ast.parse(source).body
              if isinstance(n, ast.ClassDef) and n.name == "LitellmTextbasedModelConfig")
regex = next(ast.literal_eval(a.value) for a in config.body
             if isinstance(a, ast.AnnAssign) and getattr(a.target, "id", "") == "action_regex")
out = []
for content in json.load(sys.stdin):
    try:
        out.append([a["command"] for a in parse_regex_actions(content, action_regex=regex, format_error_template="x")])
    except FormatError:
        out.append(None)
json.dump(out, sys.stdout)
"""
COMMANDS = {
    "backticks": "echo `printf %s inline` \"$(echo sub)\" '``two``'",
    "fence inside a line": "printf '%s\\n' 'a ``` b' '```not at a line start'",
    "heredoc": "cat <<'EOF' > out.txt\nline 1\n  `indented`\nEOF\ncat out.txt",
    "markdown heredoc": "cat <<'EOF' > README.md\n# Title\n```python\nprint(1)\n```\nEOF\ncat README.md",
    "fence as the last line": "cat <<'EOF'\n```\nEOF",
    "tool-call markup": "cat <<'EOF'\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {}}\n</tool_call>\nEOF",
}


def mini_parse(contents: list[str]) -> list[list[str] | None]:
    python = venv_dir() / "bin" / "python"
    if not python.exists():
        pytest.fail(f"mini-swe-agent is not installed at {python.parent}: run bash tools/install_harnesses.sh",
                    pytrace=False)
    env = {"MSWEA_SILENT_STARTUP": "1", "MSWEA_CONFIGURED": "true", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([str(python), "-c", PARSE], input=json.dumps(contents), capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    parsed: list[list[str] | None] = json.loads(done.stdout)
    return parsed


def sh(command: str, cwd: Path) -> tuple[int, str]:
    done = subprocess.run(["/bin/sh", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout + done.stderr


def _replies() -> dict[str, str]:
    script = OracleScript(solution_patch=PATCH, verify="pytest -q", actions=TEXT)
    plan = turns(script, parallel=True)  # parallel: the look turn's two commands are joined into one
    cases = {name: Turn(label="apply", commands=(cmd,)) for name, cmd in COMMANDS.items()}
    cases |= {f"script {t.label}": t for t in plan}
    return {name: checked_action_text(turn, TEXT, "qwen", [], "t") for name, turn in cases.items()}


def _unfenced() -> list[str]:
    two = action_text(Turn(label="look", commands=("ls",)), TEXT) * 2
    return ["THOUGHT: nothing to run", two]


@pytest.fixture(scope="module")
def mini_parsed() -> tuple[dict[str, str], dict[str, list[str] | None], list[list[str] | None]]:
    """(the oracle's replies, what mini-swe-agent parses of each, what it parses of the unfenced replies): one
    run of its parser for the module."""
    replies, unfenced = _replies(), _unfenced()
    parsed = mini_parse([*replies.values(), *unfenced])
    return replies, dict(zip(replies, parsed[:len(replies)], strict=True)), parsed[len(replies):]


@pytest.mark.harness
def test_each_reply_parses_back_through_mini_swe_agent(tmp_path: Path, mini_parsed: Any) -> None:
    replies, parsed, _ = mini_parsed
    assert "<tool_call>" not in replies["tool-call markup"]  # it would parse as a call: sent encoded
    for reply in replies.values():
        assert reply.startswith("THOUGHT: ") and reply.count(f"```{TEXT_FENCE}\n") == 1
    assert all(p is not None and len(p) == 1 for p in parsed.values()), parsed
    assert parsed["script answer"] == [FINISH]
    assert parsed["script look"] == ["git status --short && cat calc.py"]
    for name in ("backticks", "fence inside a line", "heredoc"):
        assert parsed[name] == [COMMANDS[name]], name  # verbatim
    for i, (name, command) in enumerate(COMMANDS.items()):  # the same effect, run the same way in fresh folders
        want, got = tmp_path / f"{i}a", tmp_path / f"{i}b"
        want.mkdir()
        got.mkdir()
        result = parsed[name]
        assert result is not None
        assert sh(command, want) == sh(result[0], got), name
        assert sorted(p.name for p in want.iterdir()) == sorted(p.name for p in got.iterdir())


@pytest.mark.harness
def test_a_reply_without_the_fence_is_a_format_error_for_mini(mini_parsed: Any) -> None:
    """The check above can fail: mini-swe-agent refuses a reply with no block, or two."""
    assert mini_parsed[2] == [None, None]


def test_joined_commands_keep_a_heredoc_terminator_alone() -> None:
    apply = f"git apply - <<'TAG'\n{PATCH}TAG"
    joined = join_commands((apply, "pytest -q"))
    assert "\nTAG\n}" in joined and joined.endswith(" && pytest -q")
    assert join_commands(("git status", "ls")) == "git status && ls"


def test_policy_writes_text_turns_by_history_length(qwen3_template: Any) -> None:
    policy = OraclePolicy(OracleScript(solution_patch=PATCH, verify="pytest -q", actions=TEXT), qwen3_template, "qwen")
    msgs = [ChatMessage(role="system", content="sys"), ChatMessage(role="user", content="fix calc")]
    labels, texts = [], []
    for _ in range(5):
        req = CanonicalRequest(messages=list(msgs))  # no tools: text actions
        found = policy.turn(req, b"{}", "openai_chat")
        text = policy.forced_text(req, b"{}", "openai_chat")
        assert found is not None and text is not None
        labels.append(found[0].label)
        texts.append(text)
        msgs += [ChatMessage(role="assistant", content=text), ChatMessage(role="user", content="<returncode>0")]
    assert labels == ["look", "apply", "verify", "answer", "answer"]
    assert texts[3].endswith(f"```{TEXT_FENCE}\n{FINISH}\n```")
    ids = policy.reply_ids(CanonicalRequest(messages=msgs[:2]), b"{}", "openai_chat", in_think=False)
    assert ids is not None and qwen3_template.decode(ids[:-1]) == texts[0]  # not the last turn: no think block
    noop = OraclePolicy(OracleScript(noop=True, actions=TEXT), qwen3_template, "qwen")
    first = noop.forced_text(CanonicalRequest(messages=msgs[:2]), b"{}", "openai_chat")
    assert first is not None and "ls -la" in first


def test_text_format_needs_its_fence() -> None:
    with pytest.raises(ValueError, match="fence"):
        ActionFormat(kind="text")
    assert TEXT.name == "text:mswea_bash_command" and TEXT.finish == FINISH
