"""An oracle script: what the oracle does in a session, from the task's reference solution.

Turns: *look* (``git status``, the first file the patch touches or ``solution_files`` names; or the task's
``solution_look`` commands), *apply* (the patch through ``git apply`` from a heredoc, or the solution commands),
*verify* (the task's test command) and a plain final *answer* that ends the session. Where the harness accepts
parallel tool calls, the look turn makes two calls at once.

A solution goes literally (a patch in a heredoc) only when it is plain text a harness's shell tool takes as it is:
no control characters but newlines and tabs (Claude Code refuses a command holding a carriage return, "control
characters that would be hidden in the approval dialog"), no command-substitution syntax even quoted (Gemini CLI
blocks ``$(``, backticks, ``<(``, ``>(`` anywhere in a command), no heredoc tag line, and when the model's
tool-call format holds it (``policy`` parses its own call back). Otherwise it goes base64-encoded: a patch into
``git apply``, commands into ``bash``. A patch longer than :data:`LITERAL_MAX` always does, in pieces of
:data:`PIECE_MAX` characters, one turn each (a command line is one argument string, which Linux caps at 128 KiB),
written to :data:`PIECES_PATH` and applied by the last.
"""

from __future__ import annotations

import base64
import re
import shlex
from typing import Any

import msgspec

from polar_hpc.config.run import Policy
from polar_hpc.errors import PolarError
from polar_hpc.wire.actions import TOOL_CALLS, ActionFormat
from polar_hpc.wire.session import (
    SOLUTION_COMMANDS,
    SOLUTION_FILES,
    SOLUTION_FIRST_TRY,
    SOLUTION_LOOK,
    SOLUTION_PATCH,
)

HEREDOC_TAG = "POLAR_ORACLE_PATCH"
LITERAL_MAX = 60_000
"""Patches up to this many characters go literally in a heredoc (when it can carry them)."""
PIECE_MAX = 60_000
"""Base64 characters per command of an encoded patch."""
PIECES_PATH = "/tmp/polar-oracle-patch.b64"
GIT_APPLY = "git apply --whitespace=nowarn -"
DEFAULT_ANSWER = "I applied the fix and ran the tests; the task is done."
NOOP_ANSWER = "I looked at the repository and ran the tests; I changed nothing."
_DIFF_FILE = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.MULTILINE)


class OracleError(PolarError, ValueError):
    """A script or request the oracle cannot act on; the message says what was expected and what was seen."""


class OracleScript(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The reference solution of one task. ``polar-hpc proxy --oracle FILE`` reads this as JSON."""

    solution_patch: str | None = None
    solution_commands: list[str] = msgspec.field(default_factory=list)
    solution_files: list[str] = msgspec.field(default_factory=list)
    """The files the solution commands edit; the look turn reads the first (a patch names its own)."""
    look: list[str] = msgspec.field(default_factory=list)
    """The look turn's commands (default: ``git status --short`` and ``cat`` of the first file it edits)."""
    verify: str | None = None
    """The test command run after applying (default: none, the verify turn is left out)."""
    first_try: list[str] = msgspec.field(default_factory=list)
    """A first fix that misses (a recovery demonstration): applied and verified before the look turn comes again
    and the solution is applied."""
    answer: str = DEFAULT_ANSWER
    noop: bool = False
    """Take the turns without applying anything (a grader must then give reward 0)."""
    delegate: bool = False
    """Hand the task to the harness's sub-agent tool first; the sub-agent's session runs the script."""
    task: str = ""
    """The task's id (named in errors)."""
    actions: ActionFormat = TOOL_CALLS
    """How the harness reads actions (its adapter's ``action_format``): tool calls or text (``text_actions``)."""

    def __post_init__(self) -> None:
        if not self.noop and not self.solution_patch and not self.solution_commands:
            raise OracleError(f"an oracle script needs {SOLUTION_PATCH} (a unified diff) or {SOLUTION_COMMANDS} "
                              "(a list of shell commands); it has neither")

    def patch_files(self) -> list[str]:
        """The files the solution edits: the patch's, else ``solution_files``."""
        if not self.solution_patch:
            return list(self.solution_files)
        return [f for f in _DIFF_FILE.findall(self.solution_patch) if f != "/dev/null"]


class Turn(msgspec.Struct, kw_only=True, frozen=True):
    """One model turn: shell commands to call (several = parallel calls), or a plain answer when empty."""

    label: str
    commands: tuple[str, ...] = ()
    answer: str = ""
    trained: bool = True
    """False for a recovery demonstration's missed fix: its tokens stay in the chain as context, out of the loss."""


SHELL_FILTERED = ("$(", "`", "<(", ">(")
"""Command-substitution syntax a harness's shell tool may refuse even inside quotes (Gemini CLI)."""


def plain_text(text: str) -> bool:
    """Whether ``text`` goes literally into a harness's shell command (see the module's docstring)."""
    return not any(s in text for s in SHELL_FILTERED) and all(c in "\n\t" or c.isprintable() for c in text)


def _heredoc_fits(patch: str) -> bool:
    return len(patch) <= LITERAL_MAX and HEREDOC_TAG not in patch.splitlines() and plain_text(patch)


def apply_commands(script: OracleScript, *, encoded: bool = False) -> list[str]:
    """The commands that apply the solution, one a turn: the patch in a heredoc, or base64-encoded (``encoded``,
    or when the heredoc cannot carry it) in pieces; or the solution commands (under ``set -e``; one one-line
    command as it is, the shortest turn a model can learn to write)."""
    if not script.solution_patch:
        one = len(script.solution_commands) == 1 and "\n" not in script.solution_commands[0]
        body = script.solution_commands[0] if one else "set -e\n" + "\n".join(script.solution_commands)
        if not encoded and plain_text(body):
            return [body]
        return [f"printf %s '{base64.b64encode(body.encode()).decode()}' | base64 -d | bash"]
    patch = script.solution_patch if script.solution_patch.endswith("\n") else script.solution_patch + "\n"
    if not encoded and _heredoc_fits(patch):
        return [f"{GIT_APPLY} <<'{HEREDOC_TAG}'\n{patch}{HEREDOC_TAG}"]
    b64 = base64.b64encode(patch.encode()).decode()
    if len(b64) <= PIECE_MAX:
        return [f"printf %s '{b64}' | base64 -d | {GIT_APPLY}"]
    pieces = [b64[i : i + PIECE_MAX] for i in range(0, len(b64), PIECE_MAX)]
    cmds = [f"printf %s '{p}' {'>' if i == 0 else '>>'} {PIECES_PATH}" for i, p in enumerate(pieces)]
    cmds[-1] += f" && base64 -d {PIECES_PATH} | {GIT_APPLY} && rm -f {PIECES_PATH}"
    return cmds


def turns(script: OracleScript, *, parallel: bool, encoded: bool = False) -> list[Turn]:
    files = script.patch_files()
    look = script.look or ["git status --short", f"cat {shlex.quote(files[0])}" if files else "ls -la"]
    look_turn = Turn(label="look", commands=tuple(look) if parallel else (" && ".join(look),))
    out = [look_turn]
    if script.first_try and not script.noop:
        first = OracleScript(solution_commands=script.first_try, task=script.task)
        out += [Turn(label="apply", commands=(c,), trained=False) for c in apply_commands(first, encoded=encoded)]
        if script.verify:
            out.append(Turn(label="verify", commands=(script.verify,)))
        out.append(look_turn)
    if not script.noop:
        out += [Turn(label="apply", commands=(c,)) for c in apply_commands(script, encoded=encoded)]
    if script.verify:
        out.append(Turn(label="verify", commands=(script.verify,)))
    answer = NOOP_ANSWER if script.noop else script.answer
    finish = script.actions.finish
    out.append(Turn(label="answer", answer=answer, commands=(finish,) if finish else ()))
    return out


def load_script(path: str) -> OracleScript:
    """An oracle script from a JSON file (the fields of :class:`OracleScript`); ValueError naming the fault."""
    from pathlib import Path

    try:
        raw = Path(path).read_bytes()
    except OSError as err:
        raise ValueError(f"cannot read the oracle script: {err.strerror}") from None
    try:
        return msgspec.json.decode(raw, type=OracleScript)
    except msgspec.ValidationError as err:
        raise ValueError(f"not an oracle script: {err}") from None
    except msgspec.DecodeError as err:
        raise ValueError(f"expected a JSON object with solution_patch or solution_commands: {err}") from None


def summary(script: OracleScript, done: int) -> str:
    """A plain progress summary (what a harness asks for when it compacts its history)."""
    labels = [t.label for t in turns(script, parallel=False)]
    did, left = labels[:done], labels[done:]
    return (f"Summary: the steps done so far are {', '.join(did) or 'none'}; "
            f"left to do: {', '.join(left) or 'nothing'}. Continue with the next step.")


SUBAGENT_MARKER = "[oracle sub-agent task]"
"""Opens the prompt the oracle gives a sub-agent: requests whose user turns hold it are the sub-agent's."""
DELEGATED_ANSWER = "The sub-agent applied the fix and ran the tests; the task is done."


def delegate_turns() -> list[Turn]:
    """The main agent's turns when it delegates: call the sub-agent tool, then answer."""
    return [Turn(label="delegate"), Turn(label="answer", answer=DELEGATED_ANSWER)]


def script_from_task(metadata: dict[str, Any], *, policy: Policy, verify: str | None, task: str = "",
                     actions: ActionFormat = TOOL_CALLS) -> OracleScript:
    """The script of a task (its metadata holds ``solution_patch`` or ``solution_commands``)."""
    patch = metadata.get(SOLUTION_PATCH)
    commands = metadata.get(SOLUTION_COMMANDS, [])
    if patch is not None and not isinstance(patch, str):
        raise OracleError(f"task metadata {SOLUTION_PATCH}: expected a unified diff as a string, "
                          f"got {type(patch).__name__}")
    if isinstance(commands, str):
        commands = [commands]
    files = metadata.get(SOLUTION_FILES, [])
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise OracleError(f"task metadata {SOLUTION_FILES}: expected a list of file paths, got {files!r:.200}")
    look = metadata.get(SOLUTION_LOOK, [])
    if not isinstance(look, list) or not all(isinstance(c, str) and c for c in look):
        raise OracleError(f"task metadata {SOLUTION_LOOK}: expected a list of shell commands, got {look!r:.200}")
    first_try = metadata.get(SOLUTION_FIRST_TRY, [])
    if not isinstance(first_try, list) or not all(isinstance(c, str) and c for c in first_try):
        raise OracleError(f"task metadata {SOLUTION_FIRST_TRY}: expected a list of shell commands, "
                          f"got {first_try!r:.200}")
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        raise OracleError(f"task metadata {SOLUTION_COMMANDS}: expected a list of shell commands, "
                          f"got {commands!r:.200}")
    return OracleScript(solution_patch=patch or None, solution_commands=list(commands), solution_files=files,
                        look=look, verify=verify, first_try=first_try,
                        noop=policy == "oracle_noop", delegate=policy == "oracle_subagent", task=task,
                        actions=actions)
