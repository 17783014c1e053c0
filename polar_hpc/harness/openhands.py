"""OpenHands CLI (PyPI ``openhands``; Python 3.12 only, in a venv of its own), headless, through litellm.

``openhands --headless --json --override-with-envs -t TASK`` is its non-interactive mode: every action approved,
the critic off, JSONL events on stdout, the process ends when the agent does. With ``--override-with-envs`` and no
stored agent it builds its default CLI agent (tools ``terminal``, ``file_editor``, ``task_tracker``,
``task_tool_set``; an LLM-summarizing condenser) from ``LLM_MODEL`` / ``LLM_BASE_URL`` / ``LLM_API_KEY``: the model
through litellm's ``openai/`` provider at the proxy's ``/v1``. Its persistence dir (stored agent, conversations,
the skills cache) is ``$HOME/.openhands`` in the session, so no stored setting of another run is read. No Docker
or runtime server: the CLI runs the agent's tools in its own process, on the sandbox's shell.

At start it tries to ``git clone`` its public skills repository into that dir; from a sandbox without network the
clone fails and it goes on without them (``GIT_TERMINAL_PROMPT=0`` keeps git from asking). Its update check is
only in the interactive splash screen; litellm reads its cost map locally and sends no telemetry.
"""

from __future__ import annotations

import re

from polar_hpc.harness.base import BaseAdapter, HarnessContext

PERSISTENCE = ".openhands"
"""Its settings and conversations, under the session's ``$HOME``."""
_VERSION = re.compile(r"OpenHands CLI (\d[\w.+-]*\w)")


class OpenHandsAdapter(BaseAdapter):
    name = "openhands"
    binary = "openhands"
    own_turn_limit = False

    def version_of(self, output: str) -> str:
        found = _VERSION.search(output)
        return found.group(1) if found else ""

    def build(self, ctx: HarnessContext, files: list[str]) -> tuple[list[str], dict[str, str]]:
        persistence = f"{ctx.home}/{PERSISTENCE}"
        (ctx.host_home / PERSISTENCE).mkdir(parents=True, exist_ok=True)
        argv = ["openhands", "--headless", "--json", "--override-with-envs", *self.extra_args(ctx),
                "-t", ctx.instruction]
        env = {
            "LLM_MODEL": f"openai/{ctx.model}",
            "LLM_BASE_URL": f"{ctx.base_url}/v1",
            "LLM_API_KEY": ctx.api_key,
            "OPENHANDS_PERSISTENCE_DIR": persistence,
            "OPENHANDS_SUPPRESS_BANNER": "1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_TELEMETRY": "False",
            "GIT_TERMINAL_PROMPT": "0",
        }
        return argv, env
