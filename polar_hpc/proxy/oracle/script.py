"""An oracle script: what the oracle does in a session, from the task's reference solution.

Turns: *look* (``git status``, the first file the patch touches), *apply* (the patch through ``git apply`` from a
heredoc, or the solution commands), *verify* (the task's test command) and a plain final *answer* that ends the
session. Where the harness accepts parallel tool calls, the look turn makes two calls at once.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import msgspec

from polar_hpc.config.run import Policy
from polar_hpc.wire.actions import TOOL_CALLS, ActionFormat
from polar_hpc.wire.records import SOLUTION_COMMANDS, SOLUTION_PATCH

HEREDOC_TAG = "POLAR_ORACLE_PATCH"
DEFAULT_ANSWER = "I applied the fix and ran the tests; the task is done."
NOOP_ANSWER = "I looked at the repository and ran the tests; I changed nothing."
_DIFF_FILE = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.MULTILINE)


class OracleError(ValueError):
    """A script or request the oracle cannot act on; the message says what was expected and what was seen."""


class OracleScript(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The reference solution of one task. ``polar-hpc proxy --oracle FILE`` reads this as JSON."""

    solution_patch: str | None = None
    solution_commands: list[str] = msgspec.field(default_factory=list)
    verify: str | None = None
    """The test command run after applying (default: none, the verify turn is left out)."""
    answer: str = DEFAULT_ANSWER
    noop: bool = False
    """Take the turns without applying anything (a grader must then give reward 0)."""
    delegate: bool = False
    """Hand the task to the harness's sub-agent tool first; the sub-agent's session runs the script."""
    actions: ActionFormat = TOOL_CALLS
    """How the harness reads actions (its adapter's ``action_format``): tool calls or text (``text_actions``)."""

    def __post_init__(self) -> None:
        if not self.noop and not self.solution_patch and not self.solution_commands:
            raise OracleError(f"an oracle script needs {SOLUTION_PATCH} (a unified diff) or {SOLUTION_COMMANDS} "
                              "(a list of shell commands); it has neither")
        if self.solution_patch and HEREDOC_TAG in self.solution_patch:
            raise OracleError(f"{SOLUTION_PATCH} contains the heredoc tag {HEREDOC_TAG}; it cannot be written safely")

    def patch_files(self) -> list[str]:
        return [f for f in _DIFF_FILE.findall(self.solution_patch or "") if f != "/dev/null"]


class Turn(msgspec.Struct, kw_only=True, frozen=True):
    """One model turn: shell commands to call (several = parallel calls), or a plain answer when empty."""

    label: str
    commands: tuple[str, ...] = ()
    answer: str = ""


def apply_command(script: OracleScript) -> str:
    if script.solution_patch:
        patch = script.solution_patch if script.solution_patch.endswith("\n") else script.solution_patch + "\n"
        return f"git apply --whitespace=nowarn - <<'{HEREDOC_TAG}'\n{patch}{HEREDOC_TAG}"
    return "set -e\n" + "\n".join(script.solution_commands)


def turns(script: OracleScript, *, parallel: bool) -> list[Turn]:
    files = script.patch_files()
    look = ["git status --short", f"cat {shlex.quote(files[0])}" if files else "ls -la"]
    out = [Turn(label="look", commands=tuple(look) if parallel else (" && ".join(look),))]
    if not script.noop:
        out.append(Turn(label="apply", commands=(apply_command(script),)))
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


def script_from_task(metadata: dict[str, Any], *, policy: Policy, verify: str | None,
                     actions: ActionFormat = TOOL_CALLS) -> OracleScript:
    """The script of a task (its metadata holds ``solution_patch`` or ``solution_commands``)."""
    patch = metadata.get(SOLUTION_PATCH)
    commands = metadata.get(SOLUTION_COMMANDS, [])
    if patch is not None and not isinstance(patch, str):
        raise OracleError(f"task metadata {SOLUTION_PATCH}: expected a unified diff as a string, "
                          f"got {type(patch).__name__}")
    if isinstance(commands, str):
        commands = [commands]
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        raise OracleError(f"task metadata {SOLUTION_COMMANDS}: expected a list of shell commands, "
                          f"got {commands!r:.200}")
    return OracleScript(solution_patch=patch or None, solution_commands=list(commands), verify=verify,
                        noop=policy == "oracle_noop", delegate=policy == "oracle_subagent", actions=actions)
