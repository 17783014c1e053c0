"""The oracle's pieces without a server: scripts from tasks, the shell tool found by schema, tool-call text that
the proxy's own parser reads back, the turn read from a request's history."""

from __future__ import annotations

import json
from typing import Any

import pytest

from polar_hpc.chat.parse import parse_reply
from polar_hpc.policy.oracle import OraclePolicy, accepts_parallel
from polar_hpc.policy.render import tool_calls_text
from polar_hpc.policy.script import HEREDOC_TAG, OracleError, OracleScript, script_from_task, turns
from polar_hpc.policy.tools import pick_tool, shell_tool
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, ToolCall, ToolSpec
from tests.fixtures.shell_tools import SHELLS, S, obj

PATCH = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"




# The shell tools as the harnesses declare them (shapes from their first requests, trimmed to the parameters).
DISTRACTORS = [
    ToolSpec(name="write_stdin", parameters=obj({"session_id": {"type": "number"}, "chars": S}, ["session_id"])),
    ToolSpec(name="Read", parameters=obj({"file_path": S}, ["file_path"])),
    ToolSpec(name="Write", parameters=obj({"file_path": S, "content": S}, ["file_path", "content"])),
    ToolSpec(name="TaskCreate", parameters=obj({"subject": S, "command": {"type": "object"}}, ["subject"])),
]


@pytest.mark.parametrize("harness", list(SHELLS))
def test_shell_tool_is_found_among_the_harness_tools(harness: str) -> None:
    spec = SHELLS[harness]
    tool = pick_tool([*DISTRACTORS, spec, *DISTRACTORS[:1]])
    assert tool.name == spec.name
    args = tool.arguments("git status", "oracle: look")  # type: ignore[union-attr]
    required = spec.parameters["required"]
    assert set(required) <= set(args)
    if harness == "legacy_shell":  # one command's argv
        assert args["command"] == ["bash", "-lc", "git status"]
    elif harness == "cline":  # a list of whole commands
        assert args["commands"] == ["git status"]
    else:
        assert "git status" in args.values()
    if harness == "qwen_code":
        assert args["is_background"] is False
    if harness == "opencode":
        assert args["description"] == "oracle: look"


def test_no_shell_tool_is_a_clear_error() -> None:
    assert shell_tool(DISTRACTORS) is None
    assert pick_tool(DISTRACTORS).name == "Write"  # the fallback
    with pytest.raises(OracleError, match="offers: Read"):
        pick_tool(DISTRACTORS[1:2])


@pytest.mark.parametrize("parser", ["qwen", "qwen3_coder"])
def test_tool_call_text_parses_back(parser: str) -> None:
    tool = pick_tool([SHELLS["qwen_code"]])
    cmd = f"git apply - <<'{HEREDOC_TAG}'\n{PATCH}{HEREDOC_TAG}"
    calls = [(tool.name, tool.arguments("git status --short", "look")), (tool.name, tool.arguments(cmd, "apply"))]
    text = tool_calls_text(calls, parser)  # type: ignore[arg-type]
    parsed = parse_reply(text, parser, [SHELLS["qwen_code"]])  # type: ignore[arg-type]
    assert parsed.parse_error is None and parsed.content == ""
    assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == calls


def test_qwen_text_is_what_the_qwen3_template_renders(qwen3_template: Any) -> None:
    """A canonical re-render of the oracle's turn gives back the forced text (no drift even without continuation)."""
    tool = pick_tool([SHELLS["pi"]])
    args = tool.arguments("cat calc.py", "look")
    text = tool_calls_text([(tool.name, args)], "qwen")
    msgs = [{"role": "user", "content": "fix it"},
            {"role": "assistant", "content": "",
             "tool_calls": [{"type": "function", "function": {"name": "bash", "arguments": args}}]},
            {"role": "tool", "content": "def add"}]
    rendered = qwen3_template.render(msgs, [{"type": "function",
                                             "function": {"name": "bash", "parameters": SHELLS["pi"].parameters}}])
    assert f"<|im_start|>assistant\n{text}<|im_end|>" in rendered


def test_turns_from_patch_and_commands() -> None:
    script = OracleScript(solution_patch=PATCH, verify="pytest -q")
    assert [t.label for t in turns(script, parallel=True)] == ["look", "apply", "verify", "answer"]
    look = turns(script, parallel=True)[0]
    assert look.commands == ("git status --short", "cat calc.py")
    assert turns(script, parallel=False)[0].commands == ("git status --short && cat calc.py",)
    apply = turns(script, parallel=False)[1].commands[0]
    assert apply.startswith("git apply") and apply.endswith(HEREDOC_TAG) and PATCH in apply
    cmds = OracleScript(solution_commands=["sed -i s/-/+/ calc.py", "true"])
    assert turns(cmds, parallel=True)[1].commands == ("set -e\nsed -i s/-/+/ calc.py\ntrue",)
    one = script_from_task({"solution_commands": ["sed -i s/-/+/ calc.py"], "solution_files": ["calc.py"]},
                           policy="oracle", verify="pytest -q")
    assert [t.commands for t in turns(one, parallel=False)[:3]] == [
        ("git status --short && cat calc.py",), ("sed -i s/-/+/ calc.py",), ("pytest -q",)]
    with pytest.raises(OracleError, match="solution_files: expected a list of file paths"):
        script_from_task({"solution_commands": ["true"], "solution_files": "calc.py"}, policy="oracle", verify=None)
    looked = script_from_task({"solution_commands": ["sed -i '3s/.*/x/' calc.py"], "solution_files": ["calc.py"],
                               "solution_look": ["grep -n -A5 'def f(' calc.py"]}, policy="oracle", verify=None)
    assert turns(looked, parallel=True)[0].commands == ("grep -n -A5 'def f(' calc.py",)  # the task's own look
    with pytest.raises(OracleError, match="solution_look: expected a list of shell commands"):
        script_from_task({"solution_commands": ["true"], "solution_look": "cat calc.py"}, policy="oracle", verify=None)
    noop = script_from_task({}, policy="oracle_noop", verify="pytest")
    assert [t.label for t in turns(noop, parallel=True)] == ["look", "verify", "answer"]


def test_a_recovery_demonstration_misses_first_then_looks_again_and_fixes() -> None:
    meta = {"solution_commands": ["perl fix"], "solution_first_try": ["perl miss"], "solution_look": ["grep f"]}
    script = script_from_task(meta, policy="oracle", verify="pytest -q")
    assert [(t.label, t.commands) for t in turns(script, parallel=False)] == [
        ("look", ("grep f",)), ("apply", ("perl miss",)), ("verify", ("pytest -q",)), ("look", ("grep f",)),
        ("apply", ("perl fix",)), ("verify", ("pytest -q",)), ("answer", ())]
    assert [t.trained for t in turns(script, parallel=False)] == [True, False, True, True, True, True, True]
    noop = script_from_task(meta, policy="oracle_noop", verify="pytest -q")
    assert [t.label for t in turns(noop, parallel=False)] == ["look", "verify", "answer"]
    with pytest.raises(OracleError, match="solution_first_try: expected a list of shell commands"):
        script_from_task({**meta, "solution_first_try": "perl miss"}, policy="oracle", verify=None)


def test_bad_scripts_are_refused() -> None:
    with pytest.raises(OracleError, match="solution_patch .* or solution_commands"):
        script_from_task({"repo": "x"}, policy="oracle", verify=None)
    with pytest.raises(OracleError, match="expected a unified diff"):
        script_from_task({"solution_patch": 3}, policy="oracle", verify=None)
    with pytest.raises(OracleError, match="list of shell commands"):
        script_from_task({"solution_commands": [1]}, policy="oracle", verify=None)
    assert script_from_task({"solution_commands": "make fix"}, policy="oracle",
                            verify=None).solution_commands == ["make fix"]


def test_parallel_switches() -> None:
    assert accepts_parallel(b'{"model": "m"}', "openai_chat")
    assert not accepts_parallel(b'{"parallel_tool_calls": false}', "openai_responses")
    assert not accepts_parallel(b'{"tool_choice": {"type": "auto", "disable_parallel_tool_use": true}}', "anthropic")


def test_turn_follows_the_history(qwen3_template: Any) -> None:
    policy = OraclePolicy(OracleScript(solution_patch=PATCH, verify="pytest -q"), qwen3_template, "qwen")
    tools = [SHELLS["pi"]]
    msgs = [ChatMessage(role="user", content="fix calc")]
    labels = []
    for _ in range(5):
        req = CanonicalRequest(messages=list(msgs), tools=tools)
        found = policy.turn(req, b"{}", "openai_chat")
        assert found is not None
        labels.append(found[0].label)
        msgs += [ChatMessage(role="assistant", tool_calls=[ToolCall(id="c", name="bash", arguments="{}")]),
                 ChatMessage(role="tool", content="ok", tool_call_id="c")]
    assert labels == ["look", "apply", "verify", "answer", "answer"]
    fresh = OraclePolicy(OracleScript(solution_patch=PATCH), qwen3_template, "qwen")
    assert fresh.turn(CanonicalRequest(messages=msgs[:1]), b"{}", "openai_chat") is None  # no tools yet: sampled
    compact = policy.turn(CanonicalRequest(messages=[ChatMessage(role="user", content="Summarize the work.")]),
                          b"{}", "openai_chat")
    assert compact is not None and compact[0].label == "summary" and "left to do: nothing" in compact[0].answer


def test_the_final_answer_is_written_as_the_template_renders_a_last_turn(qwen3_template: Any) -> None:
    policy = OraclePolicy(OracleScript(solution_patch=PATCH, verify="pytest -q"), qwen3_template, "qwen")
    msgs = [ChatMessage(role="user", content="fix calc")]
    for label in ("look", "apply", "verify"):
        msgs += [ChatMessage(role="assistant", tool_calls=[ToolCall(id=label, name="bash", arguments="{}")]),
                 ChatMessage(role="tool", content="ok", tool_call_id=label)]
    for kwargs, prefix in (({}, "<think>\n\n</think>\n\n"), ({"enable_thinking": False}, "")):
        req = CanonicalRequest(messages=msgs, tools=[SHELLS["pi"]], template_kwargs=kwargs)
        answer = policy.forced_text(req, b"{}", "openai_chat")
        ids = policy.reply_ids(req, b"{}", "openai_chat", in_think=False)
        assert answer is not None and ids is not None and ids[-1] == qwen3_template.end_of_turn_id
        assert qwen3_template.decode(ids[:-1]) == prefix + answer  # Qwen3: an empty reasoning block, unless the
        # prompt holds one (enable_thinking false); the finished conversation renders to the prompt + these ids
        prompt = qwen3_template.encode(qwen3_template.render_request(msgs, req.tools, True, **kwargs))
        done = [*msgs, ChatMessage(role="assistant", content=answer)]
        whole = qwen3_template.encode(qwen3_template.render_request(done, req.tools, False, **kwargs))
        assert whole[: len(prompt) + len(ids)] == prompt + ids
    fresh = OraclePolicy(OracleScript(solution_patch=PATCH, verify="pytest -q"), qwen3_template, "qwen")
    tool_turn = CanonicalRequest(messages=msgs[:1], tools=[SHELLS["pi"]])
    ids = fresh.reply_ids(tool_turn, b"{}", "openai_chat", in_think=False)  # tool calls: as the history renders them
    assert ids is not None and qwen3_template.decode(ids).startswith("<tool_call>")
    thinking = policy.reply_ids(CanonicalRequest(messages=msgs, tools=[SHELLS["pi"]]), b"{}", "openai_chat",
                                in_think=True)
    assert thinking is not None and qwen3_template.decode(thinking).startswith("</think>\n\n")


def test_a_compacted_history_continues_where_the_script_was(qwen3_template: Any) -> None:
    policy = OraclePolicy(OracleScript(solution_patch=PATCH, verify="pytest -q"), qwen3_template, "qwen")
    look = [ChatMessage(role="user", content="fix calc"),
            ChatMessage(role="assistant", tool_calls=[ToolCall(id="c", name="bash", arguments="{}")]),
            ChatMessage(role="tool", content="ok", tool_call_id="c")]
    first = policy.turn(CanonicalRequest(messages=look, tools=[SHELLS["pi"]]), b"{}", "openai_chat")
    assert first is not None and first[0].label == "apply"
    summary = policy.forced_text(CanonicalRequest(messages=[*look, ChatMessage(role="user", content="compact")]),
                                 b"{}", "openai_chat")
    assert summary is not None and "done so far are look" in summary
    compacted = [ChatMessage(role="user", content="fix calc"), ChatMessage(role="user", content=summary)]
    again = policy.turn(CanonicalRequest(messages=compacted, tools=[SHELLS["pi"]]), b"{}", "openai_chat")
    assert again is not None and again[0].label == "apply"  # not "look" again
    compacted += [ChatMessage(role="assistant", tool_calls=[ToolCall(id="d", name="bash", arguments="{}")]),
                  ChatMessage(role="tool", content="applied", tool_call_id="d")]
    after = policy.turn(CanonicalRequest(messages=compacted, tools=[SHELLS["pi"]]), b"{}", "openai_chat")
    assert after is not None and after[0].label == "verify"
    ids = policy.forced_ids("done", in_think=True)
    assert ids[-1] == qwen3_template.end_of_turn_id and qwen3_template.decode(ids).startswith("</think>")


def test_delegating_oracle_calls_the_subagent_tool_then_answers(qwen3_template: Any) -> None:
    from polar_hpc.policy.script import SUBAGENT_MARKER

    agent = ToolSpec(name="Agent", parameters=obj({"description": S, "prompt": S, "subagent_type": S},
                                                  ["description", "prompt"]))
    script = OracleScript(solution_patch=PATCH, verify="pytest -q", delegate=True)
    policy = OraclePolicy(script, qwen3_template, "qwen")
    main = [ChatMessage(role="user", content="fix calc")]
    text = policy.forced_text(CanonicalRequest(messages=main, tools=[agent, SHELLS["claude_code"]]), b"{}", "anthropic")
    assert text is not None
    call = parse_reply(text, "qwen").tool_calls[0]
    args = json.loads(call.arguments)
    assert call.name == "Agent" and args["prompt"] == f"{SUBAGENT_MARKER}\nfix calc" and args["description"]
    sub = [ChatMessage(role="user", content=args["prompt"])]
    sub_turn = policy.turn(CanonicalRequest(messages=sub, tools=[SHELLS["claude_code"]]), b"{}", "anthropic")
    assert sub_turn is not None and sub_turn[0].label == "look"  # the sub-agent runs the script
    main += [ChatMessage(role="assistant", tool_calls=[call]), ChatMessage(role="tool", content="done")]
    last = policy.turn(CanonicalRequest(messages=main, tools=[agent, SHELLS["claude_code"]]), b"{}", "anthropic")
    assert last is not None and last[0].label == "answer"
