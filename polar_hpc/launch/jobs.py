"""What a submitted job runs: one component as a supervised subprocess, checkpointable for requeue.

The job body (pickled by submitit) starts ``python -m polar_hpc <component> ...`` with the frozen code of the run
first on ``PYTHONPATH``, forwards SIGTERM to it, and on preemption (submitit's checkpoint hook) asks it to drain
and commit its shard before the job is requeued.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import submitit

from polar_hpc.launch.budget import DEFAULT_STOP_GRACE_S
from polar_hpc.launch.monitor import SLURM_STOP_SIGNAL, cancel_run
from polar_hpc.log import get_logger
from polar_hpc.util.proc import stop_tree, write_pid_file
from polar_hpc.wire.rundir import Component, RunDir

INFERENCE_RESTARTS = 3
"""How often a job restarts its inference server in place when it dies on its own (killed, crashed) while the run
goes on (the gateways pause meanwhile and their cut sessions run again); once more, and the job stops the run,
saying why (``polar-hpc resume`` goes on). A job that ends whole (walltime, preemption) is requeued instead, with
a fresh count."""
POLL_S = 1.0
"""How often a job looks at its component (exited? run over? the monitor's verdict)."""

log = get_logger("launch")


def component_argv(run: RunDir, component: Component, index: int) -> list[str]:
    base = [sys.executable, "-u", "-m", "polar_hpc"]
    cfg = str(run.config_path)
    if component == "inference":
        return [*base, "serve-inference", "--config", cfg, "--run-dir", str(run.root), "--index", str(index)]
    if component == "coordinator":
        return [*base, "coordinator", "--config", cfg, "--run-dir", str(run.root)]
    return [*base, "gateway", "--config", cfg, "--run-dir", str(run.root), "--rank", str(index)]


def _run_finished(run: RunDir) -> bool:
    status = run.read_status()
    return status is not None and status.finished


def _ignore_job_signals() -> None:
    """Slurm signals every process of the step: the preemption / time-limit signal (USR2) and ``cancel``'s
    :data:`SLURM_STOP_SIGNAL` are the job body's, to stop its component in order; ignored by the component, and
    inherited so by its children (harnesses, sandboxes), whose default action would kill them."""
    for sig in (signal.SIGUSR2, SLURM_STOP_SIGNAL):
        signal.signal(sig, signal.SIG_IGN)


class ComponentJob(submitit.helpers.Checkpointable):
    """Runs one component of a run. Inference servers also stop when the run's status says it is over."""

    def __init__(self, run_dir: str, component: Component, index: int,
                 stop_grace_s: float = DEFAULT_STOP_GRACE_S, *, requeue: bool = True,
                 watch: Callable[[], str | None] | None = None) -> None:
        self.run_dir = run_dir
        self.component = component
        self.index = index
        self.stop_grace_s = stop_grace_s
        self.requeue = requeue
        """``launch.requeue``: after a preemption or timeout signal, come back (True) or end (False)."""
        self.watch = watch
        """The coordinator's job: the run's monitor of lost jobs (``launch/resubmit.py``), called every second
        while the component runs; it resubmits lost jobs and returns why the run must stop, when it must."""
        self._child: subprocess.Popen[bytes] | None = None
        self._stopping = False
        self._gave_up = ""

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_child"] = None
        state["_stopping"] = False
        state["_gave_up"] = ""
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update({"stop_grace_s": DEFAULT_STOP_GRACE_S, "requeue": True, "_gave_up": "", "watch": None,
                              **state})

    def pid_file(self) -> Path:
        return RunDir(self.run_dir).pid_file(self.component, self.index)

    def __call__(self) -> int:
        run = RunDir(self.run_dir)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(run.code), env.get("PYTHONPATH", "")) if p)
        env["POLAR_RUN_DIR"] = str(run.root)
        log_dir = run.logs(self.component)
        log_dir.mkdir(parents=True, exist_ok=True)
        child = self._start_child(run, env)
        previous = {sig: signal.signal(sig, lambda *_: self._stop_child()) for sig in (signal.SIGTERM,
                                                                                       SLURM_STOP_SIGNAL)}
        restarts = 0
        try:
            while True:
                code = child.poll()
                if code is not None and self._restart(run, code, restarts):
                    restarts += 1
                    child = self._start_child(run, env)
                    continue
                if code is not None:
                    break
                if self.component == "inference" and _run_finished(run):
                    self._stop_child()
                    code = 0
                    break
                why = self._watch()
                if why:  # a lost job that keeps getting lost: stop the run (spared), then this component
                    self._gave_up = why
                    self._stop_run(run, why)
                    self._stop_child()
                    code = child.wait()
                    break
                time.sleep(POLL_S)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if self._gave_up and self.watch is None:
            self._stop_run(run, f"{self._gave_up}; see {log_dir}")
        if self._gave_up and self.watch is not None:  # the monitor stopped the run: this job fails saying why
            raise RuntimeError(f"{self.component}-{self.index} stopped the run: {self._gave_up}")
        if code != 0 and (self._gave_up or run.cancelled() is None):  # stopped by a cancel: not a failure
            raise RuntimeError(f"{self.component}-{self.index} exited with status {code}; see {log_dir}")
        return code

    def _watch(self) -> str | None:
        """The monitor's verdict; its own failure (Slurm or the filesystem acting up) never ends the job."""
        if self.watch is None or self._stopping:
            return None
        try:
            return self.watch()
        except Exception:
            log.exception("the monitor of lost jobs failed; trying again at its next poll")
            return None

    def _stop_run(self, run: RunDir, reason: str) -> None:
        """The run cannot go on without this component: stop it as ``cancel`` does (gateways drain first, their
        cut sessions released), with the reason for ``status`` and ``--wait``; this job itself is spared."""
        log.error("%s; stopping the run (polar-hpc resume %s goes on)", reason, run.root)
        try:
            cancel_run(run, reason=reason, spare=(self.component, self.index))
        except Exception:
            log.exception("stopping the run after %s-%d gave up", self.component, self.index)

    def _start_child(self, run: RunDir, env: dict[str, str]) -> subprocess.Popen[bytes]:
        child = self._child = subprocess.Popen(component_argv(run, self.component, self.index), env=env,
                                               preexec_fn=_ignore_job_signals)
        write_pid_file(self.pid_file(), child.pid)  # pid + start time: `cancel` checks it is still ours
        return child

    def _restart(self, run: RunDir, code: int, restarts: int) -> bool:
        """Whether an inference server that ended on its own (not stopped, the run not over) is started again."""
        if self.component != "inference" or code == 0 or self._stopping:
            return False
        if run.cancelled() is not None or _run_finished(run):
            return False
        if restarts >= INFERENCE_RESTARTS:
            self._gave_up = (f"inference-{self.index} exited with status {code}, restarted {restarts} times "
                             f"already (INFERENCE_RESTARTS); giving up")
            return False
        log.warning("inference-%d exited with status %d while the run goes on; restarting it (%d of %d)",
                    self.index, code, restarts + 1, INFERENCE_RESTARTS)
        return True

    def _stop_child(self) -> None:
        """SIGTERM the component (it drains and commits), then SIGKILL whatever is left of its tree."""
        self._stopping = True
        child = self._child
        if child is None or child.poll() is not None:
            return
        stop_tree(child.pid, grace_s=self.stop_grace_s, term_all=False)
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=10)

    def checkpoint(self, *args: object, **kwargs: object) -> submitit.helpers.DelayedSubmission:
        """Preemption or timeout: let the component drain and commit, then requeue the same job (``None``, with
        ``launch.requeue = false``: submitit ends the job instead)."""
        self._stop_child()
        if not self.requeue:
            return None  # type: ignore[return-value]  # submitit: "checkpoint function returned None", no requeue
        return submitit.helpers.DelayedSubmission(
            ComponentJob(self.run_dir, self.component, self.index, self.stop_grace_s, requeue=self.requeue,
                         watch=self.watch))
