"""What the coordinator answers a client (a trainer, ``polar-hpc submit``, the HTTP facade): tasks submitted
(checked, queued, journaled), a task cancelled, a task's status. The server sends what follows from them."""

from __future__ import annotations

from polar_hpc.coordinator.journal import Cancelled, Journal, Submitted
from polar_hpc.coordinator.results import ResultBuffer
from polar_hpc.coordinator.state import DispatchState, QueueFull
from polar_hpc.log import get_logger
from polar_hpc.tasks.validate import task_problems
from polar_hpc.wire import control as c
from polar_hpc.wire.session import Task

log = get_logger("coordinator")


def submit_tasks(state: DispatchState, journal: Journal, tasks: list[Task], req: int = 0) -> c.SubmitReply:
    accepted: list[str] = []
    rejected: dict[str, str] = {}
    for task in tasks:
        problems = task_problems(task)
        if problems:
            rejected[task.task_id] = "; ".join(problems)
            continue
        try:
            state.add_task(task)
        except (ValueError, QueueFull) as err:
            rejected[task.task_id] = str(err)
            continue
        accepted.append(task.task_id)
    journal.append([Submitted(task=state.tasks[t].task) for t in accepted])
    if accepted:
        log.info("accepted %d tasks from a client", len(accepted))
    return c.SubmitReply(req=req, accepted=accepted, rejected=rejected)


def cancel_task(state: DispatchState, journal: Journal, task_id: str,
                req: int = 0) -> tuple[c.CancelReply, dict[int, list[str]]]:
    """The reply, and the running keys per rank the server asks to cancel."""
    cancelled, running = state.cancel_task(task_id)
    if task_id in state.tasks:
        journal.append([Cancelled(task_id=task_id)])
    reply = c.CancelReply(req=req, task_id=task_id, cancelled=cancelled,
                          running=sum(len(v) for v in running.values()))
    return reply, running


def task_status(state: DispatchState, recent: ResultBuffer, task_id: str, *, req: int = 0,
                with_results: bool = False) -> c.TaskStatus:
    """A task's sessions; with their results still in ``recent`` when asked."""
    t = state.tasks.get(task_id)
    if t is None:
        return c.TaskStatus(task_id=task_id, req=req, found=False)
    sessions = []
    results = []
    for key in t.keys:
        s = state.sessions[key]
        sessions.append(c.SessionInfo(s.sample_index, s.state, s.attempt, s.rank, s.reward, s.stage))
        kept = recent.get(key) if with_results else None
        if kept is not None:
            results.append(kept)
    return c.TaskStatus(task_id=task_id, req=req, state=state.task_state(task_id),
                        num_samples=len(t.keys), sessions=sessions, results=results)
