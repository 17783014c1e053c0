"""mini-swe-agent (PyPI ``mini-swe-agent``, CLI ``mini``): bash only, one linear history, through litellm.

Two modes (``agent.settings.mode``): ``tools`` (upstream's default ``mini.yaml``: a ``bash`` tool call per
action) and ``text`` (``mini_textbased.yaml``: one ```` ```mswea_bash_command ```` block per reply, after a
THOUGHT). Either way the run ends when a command's output starts with ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``,
so the adapter declares that finishing command with the action format (the oracle ends with it). Our config goes
on top of upstream's: the model through litellm's ``openai/`` provider at the proxy (key from
``OPENAI_API_KEY``), cost limit and cost tracking off, litellm's cost map read locally (no fetch at import),
yolo mode without the exit confirmation, the step limit from ``agent.max_turns``.
"""

from __future__ import annotations

import json
import re
from typing import Literal, get_args

from polar_hpc.config.run import AgentSpec
from polar_hpc.harness.base import BaseAdapter, HarnessContext, HarnessError, write_file
from polar_hpc.wire.actions import ActionFormat

MiniMode = Literal["tools", "text"]
DEFAULT_MODE: MiniMode = "tools"
"""Upstream's default (``mini`` without ``-c`` runs ``mini.yaml``, the tool-calling config)."""
UPSTREAM_CONFIG: dict[str, str] = {"tools": "mini.yaml", "text": "mini_textbased.yaml"}
MODEL_CLASS: dict[str, str] = {"tools": "litellm", "text": "litellm_textbased"}
FINISH = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
TEXT_FENCE = "mswea_bash_command"
COMMAND_TIMEOUT_S = 600
"""mini-swe-agent's per-command limit (its own default, 30 s, is shorter than a test suite)."""
_VERSION = re.compile(r"mini-swe-agent version (\d[\w.+-]*\w)")


def mini_mode(agent: AgentSpec) -> MiniMode:
    mode = agent.settings.get("mode", DEFAULT_MODE)
    if mode not in get_args(MiniMode):
        raise HarnessError(f"agent.settings.mode for mini_swe_agent: expected 'tools' or 'text', got {mode!r}")
    return mode  # type: ignore[no-any-return]


class MiniSweAgentAdapter(BaseAdapter):
    name = "mini_swe_agent"
    binary = "mini"
    settings_keys = frozenset({"mode"})
    version_args = ("--help",)  # no --version; its start-up banner names the version

    def version_of(self, output: str) -> str:
        found = _VERSION.search(output)
        return found.group(1) if found else ""

    def action_format(self, agent: AgentSpec) -> ActionFormat:
        if mini_mode(agent) == "text":
            return ActionFormat(kind="text", fence=TEXT_FENCE, thought_prefix="THOUGHT: ", finish=FINISH)
        return ActionFormat(kind="tool_calls", finish=FINISH)

    def build(self, ctx: HarnessContext, files: list[str]) -> tuple[list[str], dict[str, str]]:
        mode = mini_mode(ctx.agent)
        config = {
            "agent": {"step_limit": ctx.agent.max_turns or 0, "cost_limit": 0, "mode": "yolo",
                      "confirm_exit": False},
            "model": {
                "model_name": f"openai/{ctx.model}",
                "model_class": MODEL_CLASS[mode],
                "cost_tracking": "ignore_errors",
                "model_kwargs": {"api_base": f"{ctx.base_url}/v1", "drop_params": True},
            },
            "environment": {"environment_class": "local", "timeout": COMMAND_TIMEOUT_S},
        }
        # JSON is YAML: mini reads its config files with yaml.safe_load
        path = write_file(ctx, ".config/mini-swe-agent/polar.yaml", json.dumps(config, indent=2) + "\n", files)
        argv = ["mini", "-c", UPSTREAM_CONFIG[mode], "-c", path, "--yolo", "--exit-immediately", "--cost-limit", "0",
                "-o", f"{ctx.home}/mini-swe-agent.traj.json", *self.extra_args(ctx), "-t", ctx.instruction]
        env = {
            "MSWEA_CONFIGURED": "true",  # no first-run setup prompt
            "MSWEA_SILENT_STARTUP": "1",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "MSWEA_GLOBAL_CONFIG_DIR": f"{ctx.home}/.config/mini-swe-agent",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_TELEMETRY": "False",
        }
        return argv, env
