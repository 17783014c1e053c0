"""What sampled sessions of the distill task family did, turn by turn: did a failed fix get another try?

    python tools/bench/distill_sessions.py RUN_DIR [RUN_DIR ...]   # eval runs, GRPO runs (by policy version)

Each session's conversation (its longest trace: the last request's messages and the reply) is read as a sequence
of actions: ``look`` (grep / cat / sed -n), ``fix`` (perl -pi / sed -i), ``test`` (pytest; its tool result says
whether it passed) or ``other``, and how it ended: answered after a passing test, answered after a failing one,
answered without testing, or cut at the turn limit (TIMEOUT; with the repository fixed or not, from the grade of the
workspace as it stood). A session ``retried`` when it fixed again after a failing test run; its retry ``worked`` when
the session then passed. ``gold1`` counts sessions whose first fix is the task's reference command
(``solution_commands``, as written), ``gold2+`` those where a later fix is. Per run (and per rollout version of a
GRPO run) one row of counts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Literal

import msgspec

from polar_hpc.config.run import ACCEPT_REWARD
from polar_hpc.errors import PolarError
from polar_hpc.store.reader import ShardReader
from polar_hpc.wire.calls import ChatMessage
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.session import SOLUTION_COMMANDS
from polar_hpc.wire.traces import TraceStatus, is_accepted

Action = Literal["look", "fix", "test_pass", "test_fail", "other"]
Ending = Literal["answer_after_pass", "answer_after_fail", "answer_untested", "capped_fixed", "capped_unfixed",
                 "error"]
ENDINGS: tuple[Ending, ...] = ("answer_after_pass", "answer_after_fail", "answer_untested", "capped_fixed",
                               "capped_unfixed", "error")


class Behaviour(msgspec.Struct, frozen=True):
    calls: int
    actions: tuple[Action, ...]
    ending: Ending
    passed: bool
    gold_first: bool = False
    """The first fix is the task's reference command."""
    gold_later: bool = False
    """A fix after the first is the task's reference command."""

    @property
    def retried(self) -> bool:
        """A fix after a failing test run."""
        return any(a == "test_fail" and "fix" in self.actions[i + 1:] for i, a in enumerate(self.actions))


def _command(arguments: str) -> str:
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError:
        return arguments
    return str(args.get("command", "")) if isinstance(args, dict) else arguments


def _kind(command: str, result: str) -> Action:
    if "pytest" in command:
        return "test_pass" if " passed" in result and "failed" not in result and "error" not in result \
            else "test_fail"
    if "perl -pi" in command or "sed -i" in command:
        return "fix"
    if command.startswith(("grep", "cat", "sed -n", "head", "nl ")):
        return "look"
    return "other"


def _conversation(result: SessionResult) -> list[ChatMessage]:
    traces = result.trajectory.traces
    if not traces:
        return []
    last = max(traces, key=lambda t: len(t.prompt_messages) + len(t.response_messages))
    return [*last.prompt_messages, *last.response_messages]


def behaviour(result: SessionResult) -> Behaviour:
    messages = _conversation(result)
    replies = {m.tool_call_id: m.content for m in messages if m.role == "tool" and m.tool_call_id}
    actions: list[Action] = []
    fixes: list[str] = []
    for m in messages:
        if m.role == "assistant":
            for c in m.tool_calls:
                command = _command(c.arguments)
                actions.append(_kind(command, replies.get(c.id, "")))
                if actions[-1] == "fix":
                    fixes.append(command.strip())
    gold = {str(c).strip() for c in result.metadata.get(SOLUTION_COMMANDS, [])}
    calls = sum(1 for m in messages if m.role == "assistant")
    status = result.trajectory.status
    passed = is_accepted(status, result.reward)
    tests = [a for a in actions if a.startswith("test")]
    ending: Ending
    if status == TraceStatus.TIMEOUT:
        ending = "capped_fixed" if result.reward >= ACCEPT_REWARD else "capped_unfixed"
    elif status != TraceStatus.COMPLETED:
        ending = "error"
    elif not tests:
        ending = "answer_untested"
    else:
        ending = "answer_after_pass" if tests[-1] == "test_pass" else "answer_after_fail"
    return Behaviour(calls=calls, actions=tuple(actions), ending=ending, passed=passed,
                     gold_first=bool(fixes) and fixes[0] in gold, gold_later=any(f in gold for f in fixes[1:]))


def table(label: str, rows: list[Behaviour]) -> str:
    ends = Counter(b.ending for b in rows)
    retried = [b for b in rows if b.retried]
    fixes = Counter(min(b.actions.count("fix"), 3) for b in rows)
    calls = statistics.median(b.calls for b in rows) if rows else 0
    return (f"{label:<28}{len(rows):>5}{sum(b.passed for b in rows):>7}{calls:>7}"
            + "".join(f"{ends[e]:>8}" for e in ENDINGS)
            + f"{len(retried):>8}{sum(b.passed for b in retried):>7}"
            + f"{sum(b.gold_first for b in rows):>7}{sum(b.gold_later for b in rows):>7}"
            + f"   {fixes[0]}/{fixes[1]}/{fixes[2]}/{fixes[3]}")


HEADER = (f"{'run (rollout version)':<28}{'n':>5}{'pass':>7}{'calls':>7}"
          + "".join(f"{h:>8}" for h in ("ans+ok", "ans+bad", "ans-unt", "cap+fix", "cap-fix", "error"))
          + f"{'retried':>8}{'worked':>7}{'gold1':>7}{'gold2+':>7}   fixes 0/1/2/3+")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    args = ap.parse_args()
    try:
        readers = [(run, ShardReader(run, must_exist=True)) for run in args.runs]
    except PolarError as err:
        print(f"distill_sessions: {err}", file=sys.stderr)
        return 2
    print(HEADER)
    for run, reader in readers:
        by_version: dict[str, list[Behaviour]] = defaultdict(list)
        for result in reader.results():
            by_version[str(result.policy_version)].append(behaviour(result))
        if not by_version:
            print(f"distill_sessions: {run}: no sessions", file=sys.stderr)
            return 2
        for version, rows in sorted(by_version.items()):
            label = run.name if len(by_version) == 1 else f"{run.name[:18]} ({version})"
            print(table(label, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
