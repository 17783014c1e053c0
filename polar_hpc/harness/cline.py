"""Cline CLI 3.x (npm ``cline``; a compiled binary behind a Node resolver): OpenAI-compatible provider, headless.

The provider (base URL, model, key) goes into ``providers.json`` of its data dir, the file ``cline auth -p openai
-b URL -k KEY -m MODEL`` writes (so the key never is in the argv); the run is ``cline --json`` with the prompt,
tools auto-approved; ``$HOME/.cline`` (in the session) is its config and data dir. ``CLINE_NO_AUTO_UPDATE``
stops its background self-update.
"""

from __future__ import annotations

from polar_hpc.harness.base import BaseAdapter, HarnessContext, write_json

PROVIDER = "openai-compatible"
UPDATED_AT = "2026-01-01T00:00:00.000Z"
"""A provider entry without ``updatedAt`` is ignored without a word (cline then calls api.openai.com)."""


class ClineAdapter(BaseAdapter):
    name = "cline"
    binary = "cline"
    own_turn_limit = False

    def build(self, ctx: HarnessContext, files: list[str]) -> tuple[list[str], dict[str, str]]:
        providers = {
            "version": 1,
            "lastUsedProvider": PROVIDER,
            "modes": {},
            "providers": {PROVIDER: {"settings": {"provider": PROVIDER, "apiKey": ctx.api_key, "model": ctx.model,
                                                  "baseUrl": f"{ctx.base_url}/v1"},
                                     "updatedAt": UPDATED_AT, "tokenSource": "manual"}},
        }
        write_json(ctx, ".cline/data/settings/providers.json", providers, files)
        argv = ["cline", "-P", PROVIDER, "-m", ctx.model, "--json", "--auto-approve", "true", *self.extra_args(ctx),
                ctx.instruction]
        env = {"CLINE_NO_AUTO_UPDATE": "1", "CLINE_NO_INTERACTIVE": "1", "CLINE_DISABLE_CLINE_PASS_NOTICE": "1"}
        return argv, env
