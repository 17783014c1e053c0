"""The terminal display of --wait: what it shows for a status (rendered by rich into a string)."""

from __future__ import annotations

import io

from rich.console import Console

from polar_hpc.launch.live import LiveDisplay, TokenRate, progress_table
from polar_hpc.wire.control import RankInfo, RunStatus


def _status(updated: float, tokens: int) -> RunStatus:
    ranks = [RankInfo(rank=0, host="n1", alive=True, capacity=4, in_flight=3, uncommitted=0,
                      occupancy={"queued": 1, "init": 1, "run": 2, "postrun": 1}),
             RankInfo(rank=1, host="n2", alive=False, capacity=4, in_flight=0, uncommitted=0,
                      occupancy={"run": 9})]
    return RunStatus(sessions={"pending": 2, "running": 3, "done": 1, "committed": 5, "error": 1}, accepted=4,
                     failed=2, reward_mean=0.5, ranks=ranks, started=1000.0, updated=updated, tokens=tokens,
                     eta_s=125.0)


def test_table_shows_progress_stages_tokens_elapsed_and_eta() -> None:
    rate = TokenRate()
    rate.update(_status(1000.0, 0))
    tps = rate.update(_status(1010.0, 5000))
    assert tps == 500.0
    out = io.StringIO()
    Console(file=out, width=80, force_terminal=False).print(progress_table(_status(1010.0, 5000), tps, now=1725.0))
    header = [line for line in out.getvalue().splitlines() if "done" in line and "ETA" in line][0]
    assert header.split() == ["done", "queued", "init", "ready", "run", "postrun", "accepted", "tok/s",
                              "elapsed", "ETA"]  # nothing cut at 80 columns
    row = [line for line in out.getvalue().splitlines() if "7/12" in line][0]
    cells = row.split()
    assert cells == ["7/12", "1", "1", "0", "2", "1", "4", "500", "0:12:05", "0:02:05"]
    assert "5 committed · failed 2 · mean reward 0.500" in out.getvalue()


def test_live_display_prints_messages_and_final_table() -> None:
    out = io.StringIO()
    with LiveDisplay(out) as live:
        live.update(None)
        live.update(_status(1000.0, 10))
        live.say("every gateway rank ended (gateway-0 FAILED) before the run finished")
    text = out.getvalue()
    assert "every gateway rank ended" in text and "7/12" in text


def test_notes_say_job_states_in_component_order_and_waits_count_to_now() -> None:
    from polar_hpc.launch.live import jobs_summary, wait_line
    from polar_hpc.launch.monitor import ComponentState
    from polar_hpc.wire.waits import WaitRecord

    def comp(component: str, index: int, state: str, reason: str = "") -> ComponentState:
        return ComponentState(component=component, index=index, job_id=f"{index}", backend="slurm", state=state,
                              alive=True, pid=None, endpoint=False, log_dir="", reason=reason)

    comps = [comp("gateway", 0, "RUNNING", "None"), comp("gateway", 1, "PENDING", "Priority"),
             comp("coordinator", 0, "RUNNING"), comp("inference", 0, "PENDING", "Resources")]
    assert jobs_summary(comps) == ("inference 1 PENDING (Resources) · coordinator 1 RUNNING · "
                                   "gateway 1 RUNNING, 1 PENDING (Priority)")
    wait = WaitRecord(component="gateway-0", waiting_for=["inference-0"], since=1000.0, updated=1000.0,
                      detail="waiting for inference-0: job 7 PENDING (Resources), 0 s")
    assert wait_line(wait, now=1240.0) == "gateway-0 waiting for inference-0: job 7 PENDING (Resources), 4 min"
    assert wait_line(wait, now=1030.0) == "gateway-0 waiting for inference-0: job 7 PENDING (Resources), 30 s"
