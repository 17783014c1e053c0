"""Waiting for an inference server to become ready while checking that its process is alive.

Synchronous on purpose (used by job bodies and test fixtures, outside any event loop). HTTP goes through
urllib with proxies disabled: cluster ``http_proxy`` variables must not reroute node-local traffic.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from polar_hpc.errors import PolarError

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ServerStartError(PolarError, RuntimeError):
    """The server exited or did not become ready before the deadline; the message says what was seen."""

    exit_code = 1


def http_status(url: str, timeout_s: float = 5.0) -> tuple[int | None, str]:
    """``(status, detail)`` of a GET; status ``None`` when no HTTP answer came."""
    try:
        with _OPENER.open(url, timeout=timeout_s) as resp:
            return int(resp.status), resp.read(200).decode(errors="replace")
    except urllib.error.HTTPError as err:
        return int(err.code), err.read(200).decode(errors="replace")
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        return None, f"{type(reason).__name__}: {reason}"


def log_tail(path: str | Path | None, lines: int = 20) -> str:
    if path is None:
        return ""
    try:
        text = Path(path).read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return ""
    return "\n".join(text)


def wait_healthy(
    url: str,
    *,
    proc: subprocess.Popen[bytes] | None,
    timeout_s: float,
    log_path: str | Path | None = None,
    path: str = "/health_generate",
    poll_s: float = 0.5,
    probe_timeout_s: float = 30.0,
) -> None:
    """Poll ``url + path`` until it answers 200; raise :class:`ServerStartError` if ``proc`` exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    where = f" (log: {log_path})" if log_path else ""
    while True:
        if proc is not None and proc.poll() is not None:
            tail = log_tail(log_path)
            raise ServerStartError(
                f"server process {proc.pid} exited with status {proc.returncode} before {url}{path} answered 200; "
                f"last seen: {last}{where}" + (f"\n--- log tail ---\n{tail}" if tail else "")
            )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ServerStartError(f"waited {timeout_s:.0f}s for {url}{path} to answer 200; last seen: {last}{where}")
        status, detail = http_status(url + path, timeout_s=min(probe_timeout_s, max(0.5, remaining)))
        if status == 200:
            return
        last = f"HTTP {status}: {detail[:120]}" if status is not None else detail
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))


def wait_file(
    path: Path, *, proc: subprocess.Popen[bytes] | None, timeout_s: float, log_path: str | Path | None = None
) -> None:
    """Wait until ``path`` exists (a server's ready file) while ``proc`` is alive."""
    deadline = time.monotonic() + timeout_s
    where = f" (log: {log_path})" if log_path else ""
    while not path.is_file():
        if proc is not None and proc.poll() is not None:
            tail = log_tail(log_path)
            raise ServerStartError(
                f"server process {proc.pid} exited with status {proc.returncode} before writing {path}{where}"
                + (f"\n--- log tail ---\n{tail}" if tail else "")
            )
        if time.monotonic() >= deadline:
            raise ServerStartError(f"waited {timeout_s:.0f}s for the server to write {path}{where}")
        time.sleep(0.1)


def _process_group(proc: subprocess.Popen[bytes]) -> int | None:
    """``proc``'s process group when ``proc`` leads its own (``start_new_session=True``), else None."""
    try:
        return proc.pid if os.getpgid(proc.pid) == proc.pid else None
    except ProcessLookupError:
        return None


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to group ``pgid``; False when no process is left in it."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


def stop_process(proc: subprocess.Popen[bytes], *, grace_s: float = 10.0) -> int:
    """SIGTERM ``proc``, SIGKILL after ``grace_s``; returns its exit status.

    When ``proc`` leads its own process group (SGLang is started with ``start_new_session=True``), the whole
    group is signalled: SGLang's scheduler and TP workers are its children and would otherwise keep the GPUs.
    Members still alive ``grace_s`` after the SIGTERM get SIGKILL.
    """
    pgid = _process_group(proc) if proc.poll() is None else None
    deadline = time.monotonic() + grace_s
    if proc.poll() is None:
        if pgid is None or not _signal_group(pgid, signal.SIGTERM):
            proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            if pgid is None or not _signal_group(pgid, signal.SIGKILL):
                proc.kill()
            proc.wait(timeout=grace_s)
    if pgid is not None:
        while _signal_group(pgid, 0) and time.monotonic() < deadline:
            time.sleep(0.05)
        _signal_group(pgid, signal.SIGKILL)
    return int(proc.returncode)
