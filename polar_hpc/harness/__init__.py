"""Harness adapters: write a harness's config into the session dir, set env, return its command."""

from __future__ import annotations

from polar_hpc.harness.adapters import (
    ClaudeCodeAdapter,
    CodexAdapter,
    GeminiCliAdapter,
    OpencodeAdapter,
    PiAdapter,
    QwenCodeAdapter,
    ShellAdapter,
)
from polar_hpc.harness.base import BaseAdapter, HarnessAdapter, HarnessCommand, HarnessContext, HarnessError
from polar_hpc.harness.cline import ClineAdapter
from polar_hpc.harness.mini_swe_agent import MiniSweAgentAdapter
from polar_hpc.harness.openhands import OpenHandsAdapter

__all__ = ["HarnessAdapter", "HarnessCommand", "HarnessContext", "HarnessError", "get_adapter", "ADAPTERS"]

ADAPTERS: dict[str, type[BaseAdapter]] = {
    a.name: a
    for a in (ShellAdapter, CodexAdapter, ClaudeCodeAdapter, GeminiCliAdapter, QwenCodeAdapter, OpencodeAdapter,
              PiAdapter, MiniSweAgentAdapter, ClineAdapter, OpenHandsAdapter)
}


def get_adapter(name: str) -> HarnessAdapter:
    try:
        return ADAPTERS[name]()
    except KeyError:
        raise HarnessError(f"agent.harness: unknown harness {name!r} (known: {', '.join(ADAPTERS)})") from None
