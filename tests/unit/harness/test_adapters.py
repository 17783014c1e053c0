"""Golden config files and commands per adapter, with the no-telemetry switches of fixtures.md §3.2."""

from __future__ import annotations

import json
import shlex
import subprocess
import tomllib
from pathlib import Path

import msgspec
import pytest

from polar_hpc.config.run import AgentSpec
from polar_hpc.harness import ADAPTERS, HarnessContext, HarnessError, get_adapter
from polar_hpc.wire.rundir import SessionDir

BASE = "http://127.0.0.1:28080"
KEY = "sess-key-123"
INSTR = "Fix the bug; don't touch 'tests' $HOME"


def ctx_for(tmp_path: Path, harness: str, *, is_root: bool = False, **agent: object) -> HarnessContext:
    return HarnessContext(
        instruction=INSTR, base_url=BASE, api_key=KEY, model="policy", agent=AgentSpec(harness=harness, **agent),  # type: ignore[arg-type]
        session_dir=str(tmp_path), sandbox_session_dir="/polar/session", is_root=is_root,
    )  # fmt: skip


def read_json(tmp_path: Path, rel: str) -> object:
    return json.loads((tmp_path / "home" / rel).read_text())


def test_unknown_harness_lists_known() -> None:
    with pytest.raises(HarnessError, match="unknown harness 'aider' \\(known: shell, codex, claude_code, gemini_cli"):
        get_adapter("aider")


def test_unknown_setting_lists_valid(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="unknown key\\(s\\) colour \\(valid keys: api, extra_args\\)"):
        get_adapter("pi").prepare(ctx_for(tmp_path, "pi", settings={"colour": 1}))


def test_common_env_and_log_path(tmp_path: Path) -> None:
    for name in ADAPTERS:
        extra = {"command": "true"} if name == "shell" else {}
        cmd = get_adapter(name).prepare(ctx_for(tmp_path, name, env={"EXTRA": "x"}, **extra))  # type: ignore[arg-type]
        env = cmd.env
        assert env["OPENAI_BASE_URL"] == f"{BASE}/v1" and env["ANTHROPIC_BASE_URL"] == BASE
        assert env["GOOGLE_GEMINI_BASE_URL"] == BASE
        assert {env["OPENAI_API_KEY"], env["ANTHROPIC_API_KEY"], env["GEMINI_API_KEY"], env["POLAR_API_KEY"]} == {KEY}
        assert env["HOME"] == "/polar/session/home" and env["EXTRA"] == "x"
        assert cmd.log_path == str(SessionDir(tmp_path).agent_log(name))
        assert all(f.startswith(str(tmp_path / "home")) for f in cmd.files)


def test_shell_substitutes_quoted_instruction(tmp_path: Path) -> None:
    cmd = get_adapter("shell").prepare(ctx_for(tmp_path, "shell", command="printf %s {instruction}", max_turns=3))
    assert cmd.argv == ["/bin/sh", "-c", f"printf %s {shlex.quote(INSTR)}"]
    out = subprocess.run(cmd.argv, capture_output=True, text=True, env={"HOME": "/nonexistent"}, check=True)
    assert out.stdout == INSTR
    assert cmd.env["POLAR_MAX_TURNS"] == "3" and cmd.env["OPENAI_MODEL"] == "policy"
    ctx = msgspec.structs.replace(ctx_for(tmp_path, "shell", command="true"), session_id="add@step1/3#0")
    assert get_adapter("shell").prepare(ctx).env["POLAR_SESSION_ID"] == "add@step1/3#0"  # seeds a scripted agent
    with pytest.raises(HarnessError, match="agent.command: the shell harness needs a command"):
        get_adapter("shell").prepare(ctx_for(tmp_path, "shell"))


def test_codex(tmp_path: Path) -> None:
    cmd = get_adapter("codex").prepare(ctx_for(tmp_path, "codex"))
    config = tomllib.loads((tmp_path / "home/.codex/config.toml").read_text())
    assert config == {
        "model": "policy", "model_provider": "polar", "approval_policy": "never",
        "sandbox_mode": "danger-full-access", "check_for_update_on_startup": False,
        "model_providers": {"polar": {"name": "polar", "base_url": f"{BASE}/v1", "env_key": "POLAR_API_KEY",
                                      "wire_api": "responses"}},
        "analytics": {"enabled": False},
    }  # fmt: skip
    assert cmd.argv == ["codex", "exec", "--skip-git-repo-check", "--disable", "plugins", "-m", "policy", "--", INSTR]
    assert cmd.env["CODEX_HOME"] == "/polar/session/home/.codex"


@pytest.mark.parametrize("is_root", [False, True])
def test_claude_code_root_quirk(tmp_path: Path, is_root: bool) -> None:
    cmd = get_adapter("claude_code").prepare(ctx_for(tmp_path, "claude_code", is_root=is_root, max_turns=7))
    assert cmd.argv == [
        "claude", "-p", INSTR, "--verbose", "--output-format=stream-json", "--model", "policy",
        "--dangerously-skip-permissions", "--max-turns", "7",
    ]  # fmt: skip
    assert ("IS_SANDBOX" in cmd.env) is is_root
    for var in ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER", "DISABLE_TELEMETRY",
                "DISABLE_ERROR_REPORTING"):
        assert cmd.env[var] == "1"
    assert cmd.env["ANTHROPIC_MODEL"] == cmd.env["CLAUDE_CODE_SUBAGENT_MODEL"] == "policy"
    assert cmd.env["CLAUDE_CONFIG_DIR"] == "/polar/session/home/.claude"


def test_claude_code_allowed_tools_mode(tmp_path: Path) -> None:
    cmd = get_adapter("claude_code").prepare(
        ctx_for(tmp_path, "claude_code", is_root=True, settings={"permissions": "allowed_tools"})
    )
    assert "--allowedTools=Bash,Edit,Write,Read,NotebookEdit" in cmd.argv
    assert "--dangerously-skip-permissions" not in cmd.argv and "IS_SANDBOX" not in cmd.env
    with pytest.raises(HarnessError, match="expected 'skip' or 'allowed_tools', got 'ask'"):
        get_adapter("claude_code").prepare(ctx_for(tmp_path, "claude_code", settings={"permissions": "ask"}))


def test_gemini_cli(tmp_path: Path) -> None:
    cmd = get_adapter("gemini_cli").prepare(ctx_for(tmp_path, "gemini_cli", max_turns=5))
    assert read_json(tmp_path, ".gemini/settings.json") == {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "model": {"maxSessionTurns": 5},
    }
    assert cmd.argv == ["gemini", "--approval-mode=yolo", "-m", "policy", f"--prompt={INSTR}"]
    assert cmd.env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"


def test_qwen_code(tmp_path: Path) -> None:
    cmd = get_adapter("qwen_code").prepare(ctx_for(tmp_path, "qwen_code", max_turns=4))
    assert read_json(tmp_path, ".qwen/settings.json") == {
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "memory": {"enableManagedAutoMemory": False}, "general": {"enableAutoUpdate": False},
    }  # fmt: skip
    assert cmd.argv == [
        "qwen", "--auth-type", "openai", "--openai-base-url", f"{BASE}/v1",
        "-m", "policy", "--yolo", "--max-session-turns", "4", INSTR,
    ]  # fmt: skip
    assert cmd.env["OPENAI_API_KEY"] == KEY


def test_no_adapter_puts_the_session_key_in_its_argv(tmp_path: Path) -> None:
    """Command lines are readable by every user of the node; the key must travel in the environment."""
    for name in ADAPTERS:
        extra = {"command": "true"} if name == "shell" else {}
        cmd = get_adapter(name).prepare(ctx_for(tmp_path, name, **extra))  # type: ignore[arg-type]
        assert not any(KEY in arg for arg in cmd.argv), (name, cmd.argv)


def test_opencode(tmp_path: Path) -> None:
    cmd = get_adapter("opencode").prepare(ctx_for(tmp_path, "opencode"))
    assert read_json(tmp_path, ".config/opencode/opencode.json") == {
        "$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
        "model": "polar/policy",
        "provider": {"polar": {"npm": "@ai-sdk/openai-compatible", "name": "polar",
                               "options": {"baseURL": f"{BASE}/v1", "apiKey": "{env:POLAR_API_KEY}"},
                               "models": {"policy": {"name": "policy", "tool_call": True}}}},
    }  # fmt: skip
    assert cmd.argv == ["opencode", "run", "-m", "polar/policy", "--auto", INSTR]
    assert cmd.env["XDG_CONFIG_HOME"] == "/polar/session/home/.config"
    for var in ("OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_DEFAULT_PLUGINS",
                "OPENCODE_DISABLE_LSP_DOWNLOAD"):
        assert cmd.env[var] == "1"


@pytest.mark.parametrize(
    "api,base",
    [("openai-completions", f"{BASE}/v1"), ("openai-responses", f"{BASE}/v1"), ("anthropic-messages", BASE),
     ("google-generative-ai", f"{BASE}/v1beta")],
)  # fmt: skip
def test_pi(tmp_path: Path, api: str, base: str) -> None:
    cmd = get_adapter("pi").prepare(ctx_for(tmp_path, "pi", settings={"api": api, "extra_args": ["--no-session"]}))
    provider = {"baseUrl": base, "api": api, "apiKey": "POLAR_API_KEY", "models": [{"id": "policy"}]}
    if api == "openai-completions":
        provider["compat"] = {"supportsDeveloperRole": False, "supportsReasoningEffort": False}
    assert read_json(tmp_path, ".pi/agent/models.json") == {"providers": {"polar": provider}}
    assert cmd.argv == ["pi", "-p", "--provider", "polar", "--model", "policy", "--no-session", INSTR]
    assert cmd.env["PI_OFFLINE"] == "1" and cmd.env["PI_CODING_AGENT_DIR"] == "/polar/session/home/.pi/agent"


def test_mini_swe_agent(tmp_path: Path) -> None:
    adapter = get_adapter("mini_swe_agent")
    text = adapter.prepare(ctx_for(tmp_path, "mini_swe_agent", max_turns=7, settings={"mode": "text"}))
    config = read_json(tmp_path, ".config/mini-swe-agent/polar.yaml")  # JSON, which YAML reads
    assert config == {
        "agent": {"step_limit": 7, "cost_limit": 0, "mode": "yolo", "confirm_exit": False},
        "model": {"model_name": "openai/policy", "model_class": "litellm_textbased", "cost_tracking": "ignore_errors",
                  "model_kwargs": {"api_base": f"{BASE}/v1", "drop_params": True}},
        "environment": {"environment_class": "local", "timeout": 600},
    }
    home = "/polar/session/home"
    assert text.argv == ["mini", "-c", "mini_textbased.yaml", "-c", f"{home}/.config/mini-swe-agent/polar.yaml",
                         "--yolo", "--exit-immediately", "--cost-limit", "0",
                         "-o", f"{home}/mini-swe-agent.traj.json", "-t", INSTR]  # fmt: skip
    assert text.env["OPENAI_API_KEY"] == KEY and text.env["MSWEA_CONFIGURED"] == "true"
    assert text.env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"  # no cost-map fetch at import
    tools = adapter.prepare(ctx_for(tmp_path, "mini_swe_agent"))  # upstream's default: tool calls
    assert tools.argv[1:3] == ["-c", "mini.yaml"]
    assert read_json(tmp_path, ".config/mini-swe-agent/polar.yaml")["model"]["model_class"] == "litellm"  # type: ignore[index]
    fmt = adapter.action_format(AgentSpec(harness="mini_swe_agent"))
    assert fmt.kind == "tool_calls" and fmt.finish == "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    assert get_adapter("pi").action_format(AgentSpec(harness="pi")).finish is None
    with pytest.raises(HarnessError, match="expected 'tools' or 'text', got 'json'"):
        adapter.prepare(ctx_for(tmp_path, "mini_swe_agent", settings={"mode": "json"}))


def test_cline(tmp_path: Path) -> None:
    cmd = get_adapter("cline").prepare(ctx_for(tmp_path, "cline"))
    assert read_json(tmp_path, ".cline/data/settings/providers.json") == {
        "version": 1, "lastUsedProvider": "openai-compatible", "modes": {},
        "providers": {"openai-compatible": {
            "settings": {"provider": "openai-compatible", "apiKey": KEY, "model": "policy", "baseUrl": f"{BASE}/v1"},
            "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"}},
    }  # fmt: skip
    assert cmd.argv == ["cline", "-P", "openai-compatible", "-m", "policy", "--json", "--auto-approve", "true", INSTR]
    assert cmd.env["CLINE_NO_AUTO_UPDATE"] == "1"


def test_openhands(tmp_path: Path) -> None:
    cmd = get_adapter("openhands").prepare(ctx_for(tmp_path, "openhands", settings={"extra_args": ["--yolo"]}))
    assert cmd.argv == ["openhands", "--headless", "--json", "--override-with-envs", "--yolo", "-t", INSTR]
    home = "/polar/session/home"
    assert {k: cmd.env[k] for k in ("LLM_MODEL", "LLM_BASE_URL", "LLM_API_KEY", "OPENHANDS_PERSISTENCE_DIR")} == {
        "LLM_MODEL": "openai/policy", "LLM_BASE_URL": f"{BASE}/v1", "LLM_API_KEY": KEY,
        "OPENHANDS_PERSISTENCE_DIR": f"{home}/.openhands"}  # fmt: skip
    assert cmd.env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True" and cmd.env["LITELLM_TELEMETRY"] == "False"
    assert (tmp_path / "home" / ".openhands").is_dir() and cmd.files == []
    assert get_adapter("openhands").version_of("OpenHands CLI 1.16.0") == "1.16.0"  # what `openhands --version` says
