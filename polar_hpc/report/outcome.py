"""Why a session was not accepted, from what actually happened: its status and error, the harness exit, the
evaluator's verdict (failing tests, its own reason) and how the model's last reply ended. One owner for the
report's failure table and the viewer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from polar_hpc.evaluate.gold import GOLD_PATCH
from polar_hpc.wire.results import AgentOutcome
from polar_hpc.wire.traces import EvalResult, TraceStatus

CUT_FINISH = "length"
SHOWN_TESTS = 3


def _first_line(text: str | None) -> str:
    """The whole first line (a reason cut mid-word says less than a long one)."""
    lines = (text or "").strip().splitlines()
    return lines[0].strip() if lines else ""


def _tests(names: Sequence[str]) -> str:
    more = f" (+{len(names) - SHOWN_TESTS})" if len(names) > SHOWN_TESTS else ""
    return ", ".join(names[:SHOWN_TESTS]) + more


def _verdict(evaluation: EvalResult | None, reward: float, accept: float) -> str:
    if evaluation is None:
        return "not evaluated"
    d = evaluation.details
    if d.get(GOLD_PATCH):
        return f"oracle: {d[GOLD_PATCH]}"
    if d.get("reason"):
        extra = _first_line(str(d.get("stderr") or d.get("error") or ""))
        return f"evaluator: {d['reason']}" + (f" ({extra})" if extra else "")
    report = d.get("report")
    if isinstance(report, Mapping):
        f2p = list((report.get("FAIL_TO_PASS") or {}).get("failure") or {})
        p2p = list((report.get("PASS_TO_PASS") or {}).get("failure") or {})
        if f2p:
            return f"tests still failing: {_tests(f2p)}"
        if p2p:
            return f"tests broken: {_tests(p2p)}"
    failed = d.get("failed")
    if isinstance(failed, list) and failed:
        return f"tests failing: {_tests([str(t) for t in failed])}"
    rc = d.get("returncode")
    if isinstance(rc, int) and rc != 0:
        return f"test command exited {rc}"
    return f"reward {reward:g} below {accept:g}"


def failure_reason(*, status: int, error: str | None, evaluation: EvalResult | None, reward: float,
                   accept: float, agent: AgentOutcome | None, finish_reasons: Sequence[str]) -> str | None:
    """``None`` for an accepted session (completed, reward >= ``accept``), else one line saying why not."""
    st = TraceStatus(status)
    if st == TraceStatus.TIMEOUT:
        return f"timeout: {_first_line(error) or 'the harness ran out of time'}"
    if st == TraceStatus.ERROR:
        if (error or "").startswith("evaluation failed"):
            return f"evaluation error: {_first_line(error).removeprefix('evaluation failed: ')}"
        if agent is not None and agent.returncode not in (None, 0):
            return f"harness exited {agent.returncode}: {_first_line(agent.detail)}"
        return f"error: {_first_line(error) or 'no error text'}"
    if reward >= accept:
        return None
    why = _verdict(evaluation, reward, accept)
    if finish_reasons and finish_reasons[-1] == CUT_FINISH:
        why += "; last reply cut at the token limit"
    return why
