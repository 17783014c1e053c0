"""Which of the harness's own tools the oracle calls, found by JSON schema in the request's tool list.

A *shell tool* takes the command line as a string or an array parameter named like a command (``command``,
``cmd``, ``script``): Codex ``exec_command {cmd}``, Claude Code ``Bash {command}``, Gemini CLI / Qwen Code
``run_shell_command {command}``, opencode / pi ``bash {command}``, cline ``run_commands {commands: [...]}``.
Other required parameters get neutral values (``false``, a short description). Without one, a *file-writing tool*
(a path and a content string) is the fallback.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from polar_hpc.policy.script import OracleError
from polar_hpc.wire.calls import ToolSpec

COMMAND_PARAMS = ("command", "cmd", "script", "commands")
LIST_PARAM = "commands"
"""An array parameter of this name holds whole commands, one per item, not one command's argv."""
PATH_PARAMS = ("file_path", "path", "filePath", "filename", "file")
CONTENT_PARAMS = ("content", "contents", "text", "file_text")
_SHELL_NAME = re.compile(r"bash|shell|exec|command|terminal|run", re.IGNORECASE)
_WRITE_NAME = re.compile(r"write|create", re.IGNORECASE)


class ShellTool(msgspec.Struct, kw_only=True, frozen=True):
    name: str
    param: str
    array: bool = False
    """The command goes as ``["bash", "-lc", command]`` (Codex's older ``shell`` tool: an argv)."""
    listed: bool = False
    """The parameter is a list of whole commands (cline's ``run_commands {commands}``): ``[command]``."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    def arguments(self, command: str, label: str) -> dict[str, Any]:
        value: Any = ["bash", "-lc", command] if self.array else [command] if self.listed else command
        return {self.param: value, **{k: (label if v == "" else v) for k, v in self.extra.items()}}


class WriteTool(msgspec.Struct, kw_only=True, frozen=True):
    name: str
    path_param: str
    content_param: str
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


def _props(tool: ToolSpec) -> tuple[dict[str, Any], list[str]]:
    params = tool.parameters if isinstance(tool.parameters, dict) else {}
    props = params.get("properties")
    required = params.get("required")
    return (props if isinstance(props, dict) else {},
            [r for r in required if isinstance(r, str)] if isinstance(required, list) else [])


def _kind(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return None
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    if t == "array":
        items = schema.get("items")
        return "array" if isinstance(items, dict) and items.get("type") == "string" else None
    return t if isinstance(t, str) else None


def _filler(schema: Any) -> Any:
    """A neutral value for a required parameter the oracle has no use for ("" = the turn's label)."""
    kind = _kind(schema)
    enum = schema.get("enum") if isinstance(schema, dict) else None
    if isinstance(enum, list) and enum:
        return enum[0]
    return {"boolean": False, "integer": 120000, "number": 120000, "array": [], "object": {}}.get(kind or "", "")


def _extra(props: dict[str, Any], required: list[str], used: set[str]) -> dict[str, Any]:
    return {k: _filler(props.get(k)) for k in required if k not in used}


def shell_tool(tools: list[ToolSpec]) -> ShellTool | None:
    best: tuple[int, ShellTool] | None = None
    for tool in tools:
        props, required = _props(tool)
        for param in COMMAND_PARAMS:
            kind = _kind(props.get(param))
            if kind not in ("string", "array"):
                continue
            if len(required) > 4 or any(_kind(props.get(r)) == "object" for r in required if r != param):
                continue
            score = (2 if _SHELL_NAME.search(tool.name) else 0) + (1 if param in required else 0)
            listed = kind == "array" and param == LIST_PARAM
            cand = ShellTool(name=tool.name, param=param, array=kind == "array" and not listed, listed=listed,
                             extra=_extra(props, required, {param}))
            if best is None or score > best[0]:
                best = (score, cand)
            break
    return best[1] if best is not None else None


def write_tool(tools: list[ToolSpec]) -> WriteTool | None:
    for tool in tools:
        props, required = _props(tool)
        path = next((p for p in PATH_PARAMS if _kind(props.get(p)) == "string"), None)
        content = next((p for p in CONTENT_PARAMS if _kind(props.get(p)) == "string"), None)
        if path and content and _WRITE_NAME.search(tool.name):
            return WriteTool(name=tool.name, path_param=path, content_param=content,
                             extra=_extra(props, required, {path, content}))
    return None


class AgentTool(msgspec.Struct, kw_only=True, frozen=True):
    """A sub-agent tool: a ``prompt`` string parameter on a tool named like an agent or a task."""

    name: str
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    def arguments(self, prompt: str, label: str) -> dict[str, Any]:
        return {"prompt": prompt, **{k: (label if v == "" else v) for k, v in self.extra.items()}}


_AGENT_NAME = re.compile(r"^(agent|task)$", re.IGNORECASE)


def agent_tool(tools: list[ToolSpec]) -> AgentTool | None:
    for tool in tools:
        props, required = _props(tool)
        if _AGENT_NAME.match(tool.name) and _kind(props.get("prompt")) == "string":
            return AgentTool(name=tool.name, extra=_extra(props, required, {"prompt"}))
    return None


def pick_tool(tools: list[ToolSpec]) -> ShellTool | WriteTool:
    """The harness's shell tool, else its file-writing tool; OracleError naming the tools seen otherwise."""
    found = shell_tool(tools) or write_tool(tools)
    if found is None:
        names = ", ".join(t.name for t in tools) or "none"
        raise OracleError("the oracle needs a shell tool (a string or array parameter named "
                          f"{'/'.join(COMMAND_PARAMS)}) or a file-writing tool (a path and a content string); "
                          f"the request offers: {names}")
    return found
