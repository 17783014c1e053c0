"""The adapters: config files, env and the non-interactive command of each harness.

Settings follow reference/fixtures.md §3.2: with them each CLI ran against a local endpoint with no outside
lookup at its pinned version (``harness/pins.py``; Claude Code also at 2.1.197 and Qwen Code at 0.15.10, their
Node-20 fallbacks). Nothing is installed here: CLIs come with the image, ``RuntimeSpec.prepare`` or
``tools/install_harnesses.sh``; ``harness.toolchain`` resolves which binary and which Node run them.
"""

from __future__ import annotations

import json
import shlex

from polar_hpc.harness.base import BaseAdapter, HarnessContext, HarnessError, write_file, write_json


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid TOML basic string


class ShellAdapter(BaseAdapter):
    """Any command; ``{instruction}`` becomes the shell-quoted instruction."""

    name = "shell"
    binary = "sh"

    def build(self, ctx: HarnessContext, files: list[str]) -> tuple[list[str], dict[str, str]]:
        if not ctx.agent.command:
            raise HarnessError("agent.command: the shell harness needs a command, "
                               "e.g. \"python agent.py {instruction}\"")
        cmd = ctx.agent.command.replace("{instruction}", shlex.quote(ctx.instruction))
        env = {"POLAR_INSTRUCTION": ctx.instruction, "OPENAI_MODEL": ctx.model, "POLAR_SESSION_ID": ctx.session_id}
        if ctx.agent.max_turns is not None:
            env["POLAR_MAX_TURNS"] = str(ctx.agent.max_turns)
        extra = " ".join(shlex.quote(a) for a in self.extra_args(ctx))
        return ["/bin/sh", "-c", f"{cmd} {extra}".rstrip()], env


class CodexAdapter(BaseAdapter):
    """OpenAI Responses only; a custom provider in ``$CODEX_HOME/config.toml`` (env-only base URLs are ignored)."""

    name = "codex"
    binary = "codex"
    own_turn_limit = False

    def build(self, ctx: HarnessContext, files: list[str]) -> tuple[list[str], dict[str, str]]:
        config = "\n".join([
            f"model = {_toml_str(ctx.model)}",
            'model_provider = "polar"',
            'approval_policy = "never"',
            'sandbox_mode = "danger-full-access"',
            "check_for_update_on_startup = false",
            "",
            "[model_providers.polar]",
            'name = "polar"',
            f"base_url = {_toml_str(ctx.base_url + '/v1')}",
            'env_key = "POLAR_API_KEY"',
            'wire_api = "responses"',
            "",
            "[analytics]",
            "enabled = false",
            "",
        ])  # fmt: skip
        write_file(ctx, ".codex/config.toml", config, files)
        argv = ["codex", "exec", "--skip-git-repo-check", "--disable", "plugins", "-m", ctx.model,
                *self.extra_args(ctx), "--", ctx.instruction]
        return argv, {"CODEX_HOME": f"{ctx.home}/.codex"}


CLAUDE_ALLOWED_TOOLS = "Bash,Edit,Write,Read,NotebookEdit"


class ClaudeCodeAdapter(BaseAdapter):
    """Anthropic Messages. As root ``--dangerously-skip-permissions`` is refused unless ``IS_SANDBOX=1``."""

    name = "claude_code"
    binary = "claude"
    settings_keys = frozenset({"permissions"})

    def build(self, ctx: HarnessContext, files: list[str]) -> tuple[list[str], dict[str, str]]:
        env = {
            "CLAUDE_CONFIG_DIR": f"{ctx.home}/.claude",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "ANTHROPIC_MODEL": ctx.model,
            "ANTHROPIC_DEFAULT_SONNET_MODEL": ctx.model,
            "ANTHROPIC_DEFAULT_OPUS_MODEL": ctx.model,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": ctx.model,
            "CLAUDE_CODE_SUBAGENT_MODEL": ctx.model,
        }
        mode = ctx.agent.settings.get("permissions", "skip")
        if mode == "skip":
            perms = ["--dangerously-skip-permissions"]
            if ctx.is_root:
                env["IS_SANDBOX"] = "1"  # without it: "cannot be used with root/sudo privileges"
        elif mode == "allowed_tools":
            perms = [f"--allowedTools={CLAUDE_ALLOWED_TOOLS}"]  # '=': the variadic flag would eat the prompt
        else:
            raise HarnessError(f"agent.settings.permissions for claude_code: expected 'skip' or 'allowed_tools', "
                               f"got {mode!r}")
        turns = ["--max-turns", str(ctx.agent.max_turns)] if ctx.agent.max_turns is not None else []
        argv = ["claude", "-p", ctx.instruction, "--verbose", "--output-format=stream-json", "--model", ctx.model,
                *perms, *turns, *self.extra_args(ctx)]
        return argv, env


class GeminiCliAdapter(BaseAdapter):
    """Gemini generateContent; ``-m`` skips the model-router call, ``selectedType`` and trust avoid exits 41/55."""

    name = "gemini_cli"
    binary = "gemini"

    def build(self, ctx: HarnessContext, files: list[str]) -> tuple[list[str], dict[str, str]]:
        settings: dict[str, object] = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        }
        if ctx.agent.max_turns is not None:
            settings["model"] = {"maxSessionTurns": ctx.agent.max_turns}
        write_json(ctx, ".gemini/settings.json", settings, files)
        argv = ["gemini", "--approval-mode=yolo", "-m", ctx.model, *self.extra_args(ctx), f"--prompt={ctx.instruction}"]
        return argv, {"GEMINI_CLI_TRUST_WORKSPACE": "true"}


class QwenCodeAdapter(BaseAdapter):
    """OpenAI Chat; auto-memory side requests and the Aliyun RUM telemetry switched off in settings."""

    name = "qwen_code"
    binary = "qwen"

    def build(self, ctx: HarnessContext, files: list[str]) -> tuple[list[str], dict[str, str]]:
        settings = {
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "memory": {"enableManagedAutoMemory": False},
            "general": {"enableAutoUpdate": False},
        }
        write_json(ctx, ".qwen/settings.json", settings, files)
        turns = ["--max-session-turns", str(ctx.agent.max_turns)] if ctx.agent.max_turns is not None else []
        argv = ["qwen", "--auth-type", "openai", "--openai-base-url", f"{ctx.base_url}/v1",
                "-m", ctx.model, "--yolo", *turns, *self.extra_args(ctx), ctx.instruction]
        # the key goes through the environment (qwen reads OPENAI_API_KEY), never the argv: command lines are
        # readable by every user of the node
        return argv, {"OPENAI_API_KEY": ctx.api_key}


class OpencodeAdapter(BaseAdapter):
    """OpenAI Chat via the bundled ``@ai-sdk/openai-compatible``; model catalogue, updates, LSP downloads off."""

    name = "opencode"
    binary = "opencode"
    own_turn_limit = False

    def build(self, ctx: HarnessContext, files: list[str]) -> tuple[list[str], dict[str, str]]:
        config = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
            "model": f"polar/{ctx.model}",
            "provider": {
                "polar": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "polar",
                    "options": {"baseURL": f"{ctx.base_url}/v1", "apiKey": "{env:POLAR_API_KEY}"},
                    "models": {ctx.model: {"name": ctx.model, "tool_call": True}},
                }
            },
        }
        write_json(ctx, ".config/opencode/opencode.json", config, files)
        env = {
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        }
        argv = ["opencode", "run", "-m", f"polar/{ctx.model}", "--auto", *self.extra_args(ctx), ctx.instruction]
        return argv, env


PI_APIS = {
    "openai-completions": "/v1",
    "openai-responses": "/v1",
    "anthropic-messages": "",
    "google-generative-ai": "/v1beta",
}


class PiAdapter(BaseAdapter):
    """pi has no base-URL env var: ``models.json`` under ``$PI_CODING_AGENT_DIR``; any of four wire formats."""

    name = "pi"
    binary = "pi"
    own_turn_limit = False
    settings_keys = frozenset({"api"})

    def build(self, ctx: HarnessContext, files: list[str]) -> tuple[list[str], dict[str, str]]:
        api = ctx.agent.settings.get("api", "openai-completions")
        if api not in PI_APIS:
            raise HarnessError(f"agent.settings.api for pi: expected one of {', '.join(PI_APIS)}, got {api!r}")
        provider: dict[str, object] = {
            "baseUrl": ctx.base_url + PI_APIS[api],
            "api": api,
            "apiKey": "POLAR_API_KEY",
            "models": [{"id": ctx.model}],
        }
        if api == "openai-completions":
            provider["compat"] = {"supportsDeveloperRole": False, "supportsReasoningEffort": False}
        write_json(ctx, ".pi/agent/models.json", {"providers": {"polar": provider}}, files)
        argv = ["pi", "-p", "--provider", "polar", "--model", ctx.model, *self.extra_args(ctx), ctx.instruction]
        return argv, {"PI_CODING_AGENT_DIR": f"{ctx.home}/.pi/agent", "PI_OFFLINE": "1"}
