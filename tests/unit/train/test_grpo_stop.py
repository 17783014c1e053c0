"""The trainer's stop on a signal: the first one stops at the step boundary (at once while waiting for rollouts),
any second one at once, none during the cancel; the exit code is 128 + the first signal."""

from __future__ import annotations

import os
import signal
import time
from types import SimpleNamespace

import pytest

pytest.importorskip("transformers", reason="the train extra is not installed")

from polar_hpc.train.grpo.stop import STOP_SIGNALS, StopAtStep, Stopped, Stopper, StopState  # noqa: E402


@pytest.mark.parametrize("sig", STOP_SIGNALS)
def test_the_first_signal_stops_at_the_step_end_and_a_second_at_once(sig: signal.Signals) -> None:
    s = StopState()
    assert not s.requested and s.exit_code == 0
    assert s.on_signal(sig, waiting=False) == "step_end"
    assert s.requested and s.exit_code == 128 + sig
    assert s.on_signal(sig, waiting=False) == "now"
    assert s.exit_code == 128 + sig


def test_while_waiting_for_rollouts_the_first_signal_stops_at_once() -> None:
    s = StopState()
    assert s.on_signal(signal.SIGUSR2, waiting=True) == "now"
    assert s.on_signal(signal.SIGTERM, waiting=False) == "now"  # Slurm's time limit after its warning
    assert s.exit_code == 128 + signal.SIGUSR2  # the first signal names the stop


def test_signals_during_the_cancel_are_ignored() -> None:
    s = StopState()
    s.on_signal(signal.SIGINT, waiting=False)
    s.cancelling = True
    assert s.on_signal(signal.SIGINT, waiting=False) == "ignore"
    assert s.on_signal(signal.SIGTERM, waiting=True) == "ignore"
    assert s.exit_code == 130


def _control() -> SimpleNamespace:
    return SimpleNamespace(should_training_stop=False)


def test_the_step_callback_ends_training_only_after_a_signal_and_ranks_agree() -> None:
    stopper = Stopper()
    cb = StopAtStep(stopper)
    state = SimpleNamespace(global_step=3)
    c = _control()
    cb.on_step_end(None, state, c)
    assert not c.should_training_stop
    stopper.state.on_signal(signal.SIGTERM, waiting=False)
    cb.on_step_end(None, state, c)
    assert c.should_training_stop
    # another rank got the signal: the agreement (an all-reduce max across ranks) stops this one too
    quiet = Stopper(rank=1)
    c = _control()
    StopAtStep(quiet, agree=lambda signum: max(signum, int(signal.SIGUSR2))).on_step_end(None, state, c)
    assert c.should_training_stop and quiet.state.exit_code == 128 + signal.SIGUSR2


def test_real_signals_through_the_handlers() -> None:
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN under a shell's background job, else Python's handler
    stopper = Stopper().install()
    try:
        os.kill(os.getpid(), signal.SIGUSR1)  # not waiting: recorded, training goes on to the step end
        time.sleep(0.01)
        assert stopper.state.signum == signal.SIGUSR1
        with pytest.raises(Stopped) as err:  # the step ended, the rollout wait starts: stop now
            with stopper.waiting():
                pass
        assert err.value.exit_code == 128 + signal.SIGUSR1
        with pytest.raises(Stopped):  # a second signal anywhere: at once
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)
        stopper.cancelling()
        os.kill(os.getpid(), signal.SIGINT)  # during the cancel: logged, nothing raised
        time.sleep(0.01)
        assert stopper.state.exit_code == 128 + signal.SIGUSR1
    finally:
        stopper.restore()
    assert signal.getsignal(signal.SIGINT) is before


def test_a_first_signal_while_waiting_stops_at_once() -> None:
    stopper = Stopper().install()
    try:
        with pytest.raises(Stopped) as err, stopper.waiting():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)
        assert err.value.exit_code == 143
    finally:
        stopper.restore()
