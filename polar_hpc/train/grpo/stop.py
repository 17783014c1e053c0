"""The trainer stops on a signal at a step boundary, then cancels the run it launched (``cli``).

Signals: SIGTERM (``timeout``, ``scancel`` of the trainer's job, Slurm's time limit), SIGINT (Ctrl-C), SIGUSR1
(what ``polar-hpc cancel`` sends a Slurm job, :data:`polar_hpc.launch.monitor.SLURM_STOP_SIGNAL`) and SIGUSR2
(Slurm's pre-timeout signal as the project submits jobs: ``--signal=USR2@<delay>``, ``launch.submit``).

The first signal stops training at the next step boundary: an optimizer step under way finishes and its
checkpoint is saved (``weights.PushWeights``, then :class:`StopAtStep`); a wait for rollouts (nothing trained since
the last saved step) is left at once. A second signal, of any kind, stops at once. Either way the launched run is
then cancelled (gateways drain, shards commit) and the trainer exits with ``128 + the first signal``; signals
during that cancel are logged and do not cut it short.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any, Literal

from transformers import TrainerCallback

from polar_hpc.log import get_logger

log = get_logger("train")
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2)
Action = Literal["step_end", "now", "ignore"]


class Stopped(BaseException):
    """Training stopped by a signal (a BaseException: nothing on the way may swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class StopState:
    """What a signal does (pure: the handler's decisions, testable without signals)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        """The first stop signal received (the exit code is 128 + it)."""
        self.cancelling = False
        """Training is over and the run is being cancelled: signals no longer interrupt."""

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def exit_code(self) -> int:
        return 0 if self.signum is None else 128 + self.signum

    def on_signal(self, signum: int, *, waiting: bool) -> Action:
        """``waiting``: the trainer is waiting for rollouts (or the run), with nothing unsaved since the last step."""
        if self.cancelling:
            return "ignore"
        if self.signum is None:
            self.signum = signum
            return "now" if waiting else "step_end"
        return "now"


class Stopper:
    """Installs the handlers of :data:`STOP_SIGNALS` for the trainer's main thread; ``waiting()`` marks where the
    first signal stops at once. ``rank``: only rank 0 logs what it does (other ranks follow rank 0, ``ranks``)."""

    def __init__(self, rank: int = 0) -> None:
        self.state = StopState()
        self.rank = rank
        self._waiting = 0
        self._previous: dict[int, Any] = {}

    def install(self) -> Stopper:
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _handle(self, signum: int, _frame: Any) -> None:
        name = signal.Signals(signum).name
        action = self.state.on_signal(signum, waiting=self._waiting > 0)
        if action == "ignore":
            log.warning("%s: already stopping; the run is being cancelled", name)
            return
        if action == "step_end":
            log.warning("%s: stopping after the current step (its checkpoint saved), then cancelling the run; "
                        "send it again to stop at once", name)
            return
        log.warning("%s: stopping now", name)
        raise Stopped(self.state.signum or signum)

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """A stretch (a wait for rollouts or for the run) in which the first signal stops at once."""
        self.check()
        self._waiting += 1
        try:
            yield
        finally:
            self._waiting -= 1

    def check(self) -> None:
        """Raise :class:`Stopped` when a signal arrived."""
        if self.state.signum is not None and not self.state.cancelling:
            raise Stopped(self.state.signum)

    def cancelling(self) -> None:
        self.state.cancelling = True


class StopAtStep(TrainerCallback):
    """Ends training after the step during which a signal arrived (added after ``PushWeights``: its checkpoint is
    saved first). ``agree(signum) -> signum``: with several ranks, the stop every rank takes (``ranks``)."""

    def __init__(self, stopper: Stopper, agree: Any = None) -> None:
        self.stopper = stopper
        self.agree = agree

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        signum = self.stopper.state.signum or 0
        if self.agree is not None:
            signum = self.agree(signum)
            if signum and self.stopper.state.signum is None:
                self.stopper.state.signum = signum
        if signum:
            if self.stopper.rank == 0:
                log.warning("stopping after step %d (checkpoint saved): %s", int(state.global_step),
                            signal.Signals(signum).name)
            control.should_training_stop = True
