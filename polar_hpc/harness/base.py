"""What an adapter gets (HarnessContext), what it returns (HarnessCommand), and what adapters share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Protocol

import msgspec

from polar_hpc.config.run import AgentSpec
from polar_hpc.errors import PolarError
from polar_hpc.wire.actions import TOOL_CALLS, ActionFormat
from polar_hpc.wire.rundir import SESSION_HOME, SessionDir


class HarnessError(PolarError, ValueError):
    """An agent spec an adapter cannot run (unknown harness, missing command, bad setting)."""


class HarnessContext(msgspec.Struct, frozen=True, kw_only=True):
    instruction: str
    base_url: str
    """The proxy's root URL as seen inside the sandbox, without ``/v1`` (``Runtime.proxy_base_url``)."""
    api_key: str
    """The session key (``ProxyServer.open_session``): how the proxy knows the session."""
    model: str
    agent: AgentSpec
    session_dir: str
    """Host path of the session dir (the adapter writes config files here)."""
    sandbox_session_dir: str
    """The same dir inside the sandbox (``Runtime.sandbox_session_dir``)."""
    is_root: bool = False
    workdir: str | None = None
    """Sandbox cwd of the harness; default: ``RuntimeSpec.workdir``."""
    session_id: str = ""
    """``task/sample#attempt`` (``wire.ids.SessionId``): the shell harness exports it as
    ``POLAR_SESSION_ID`` (a scripted agent can seed itself per session with it)."""

    @property
    def home(self) -> str:
        return f"{self.sandbox_session_dir}/{SESSION_HOME}"

    @property
    def host_home(self) -> Path:
        return SessionDir(self.session_dir).home


class HarnessCommand(msgspec.Struct, frozen=True, kw_only=True):
    argv: list[str]
    env: dict[str, str]
    cwd: str | None = None
    log_path: str
    """Host path for ``Runtime.exec(log_path=...)``: the harness's stdout/stderr, in the session dir."""
    files: list[str] = msgspec.field(default_factory=list)
    """Host paths of the config files the adapter wrote."""


class HarnessAdapter(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def binary(self) -> str:
        """The executable (``<binary> --version`` is its smoke test)."""
        ...

    @property
    def own_turn_limit(self) -> bool:
        """Whether the CLI takes ``agent.max_turns`` itself (else the proxy enforces it)."""
        ...

    def prepare(self, ctx: HarnessContext) -> HarnessCommand: ...

    def action_format(self, agent: AgentSpec) -> ActionFormat:
        """How the harness reads the model's actions (the oracle writes its replies so)."""
        ...


def common_env(ctx: HarnessContext) -> dict[str, str]:
    """Base URLs and keys every SDK convention understands, HOME/XDG inside the session, no update checks."""
    home = ctx.home
    return {
        "OPENAI_BASE_URL": f"{ctx.base_url}/v1",
        "OPENAI_API_KEY": ctx.api_key,
        "ANTHROPIC_BASE_URL": ctx.base_url,
        "ANTHROPIC_API_KEY": ctx.api_key,
        "GEMINI_API_KEY": ctx.api_key,
        "GOOGLE_GEMINI_BASE_URL": ctx.base_url,
        "POLAR_BASE_URL": ctx.base_url,
        "POLAR_API_KEY": ctx.api_key,
        "POLAR_MODEL": ctx.model,
        "HOME": home,
        "XDG_CONFIG_HOME": f"{home}/.config",
        "XDG_CACHE_HOME": f"{home}/.cache",
        "XDG_DATA_HOME": f"{home}/.local/share",
        "XDG_STATE_HOME": f"{home}/.local/state",
        "SESSION_DIR": ctx.sandbox_session_dir,
        "AGENT_LOG_DIR": f"{ctx.sandbox_session_dir}/logs/agent",
        "NO_UPDATE_NOTIFIER": "1",
        "NPM_CONFIG_UPDATE_NOTIFIER": "false",
        "DO_NOT_TRACK": "1",
    }


class BaseAdapter:
    """Subclasses set ``name``, ``binary``, ``settings_keys`` and implement ``build``."""

    name: ClassVar[str] = ""
    binary: ClassVar[str] = ""
    settings_keys: ClassVar[frozenset[str]] = frozenset()
    own_turn_limit: ClassVar[bool] = True
    """Whether the CLI takes ``agent.max_turns`` itself; where it does not, the rank's proxy refuses the call past
    it and the harness is stopped (the session ends as a timeout)."""
    version_args: ClassVar[tuple[str, ...]] = ("--version",)
    """What makes the CLI print its version (``version_of`` reads it from stdout, else stderr)."""

    def version_of(self, output: str) -> str:
        return (output.strip().splitlines() or [""])[-1]

    def build(self, ctx: HarnessContext, files: list[str]) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError

    def action_format(self, agent: AgentSpec) -> ActionFormat:
        return TOOL_CALLS

    def prepare(self, ctx: HarnessContext) -> HarnessCommand:
        known = self.settings_keys | {"extra_args"}
        unknown = sorted(set(ctx.agent.settings) - known)
        if unknown:
            raise HarnessError(
                f"agent.settings for harness {self.name!r}: unknown key(s) {', '.join(unknown)} "
                f"(valid keys: {', '.join(sorted(known))})"
            )
        ctx.host_home.mkdir(parents=True, exist_ok=True)
        files: list[str] = []
        argv, env = self.build(ctx, files)
        log_path = SessionDir(ctx.session_dir).agent_log(self.name)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        return HarnessCommand(
            argv=argv,
            env={**common_env(ctx), **env, **ctx.agent.env},
            cwd=ctx.workdir,
            log_path=str(log_path),
            files=files,
        )

    def extra_args(self, ctx: HarnessContext) -> list[str]:
        extra = ctx.agent.settings.get("extra_args", [])
        if not isinstance(extra, list) or not all(isinstance(a, str) for a in extra):
            raise HarnessError(f"agent.settings.extra_args: expected a list of strings, got {extra!r}")
        return list(extra)


def write_file(ctx: HarnessContext, rel_home: str, text: str, files: list[str]) -> str:
    """Write ``text`` at ``$HOME/rel_home`` (host side); returns the sandbox path."""
    path = ctx.host_home / rel_home
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    files.append(str(path))
    return f"{ctx.home}/{rel_home}"


def write_json(ctx: HarnessContext, rel_home: str, data: dict[str, Any], files: list[str]) -> str:
    return write_file(ctx, rel_home, json.dumps(data, indent=2, sort_keys=True) + "\n", files)
