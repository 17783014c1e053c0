"""Start a reference server as a subprocess and stop it by pid (tests, ``--backend local``)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from polar_hpc.log import get_logger
from polar_hpc.reference.options import DEFAULTS, ReferenceOptions
from polar_hpc.util.readiness import stop_process, wait_file, wait_healthy
from polar_hpc.wire.endpoints import read_endpoint_file
from polar_hpc.wire.security import API_KEY_ENV

log = get_logger("reference")


class ReferenceHandle(msgspec.Struct, kw_only=True):
    url: str
    model_dir: str
    pid: int
    log_path: str


@contextmanager
def start_reference_server(
    model_dir: str | Path,
    options: ReferenceOptions = DEFAULTS,
    *,
    log_path: str | Path | None = None,
    startup_timeout_s: float = 120.0,
    env: dict[str, str] | None = None,
    api_key: str | None = None,
) -> Iterator[ReferenceHandle]:
    """Run ``polar-hpc serve-reference`` with ``options`` until the block exits; yields once ``/health_generate``
    answers 200. The server listens on a free port (``options.port`` and ``ready_file`` are this function's).
    ``api_key``: the server requires it (passed in its environment, not its command line)."""
    with tempfile.TemporaryDirectory(prefix="polar-ref-") as tmp:
        ready = Path(tmp) / "ready.json"
        log_file = Path(log_path) if log_path else Path(tmp) / "server.log"
        cmd = msgspec.structs.replace(options, port=0, ready_file=str(ready)).command(model_dir)
        child_env = {**os.environ, **(env or {})}
        if api_key:
            child_env[API_KEY_ENV] = api_key
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(log_file, "ab") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=child_env)
        try:
            wait_file(ready, proc=proc, timeout_s=startup_timeout_s, log_path=log_file)
            url = read_endpoint_file(ready).url
            wait_healthy(url, proc=proc, timeout_s=startup_timeout_s, log_path=log_file)
            log.info("reference server pid %d ready at %s", proc.pid, url)
            yield ReferenceHandle(url=url, model_dir=str(model_dir), pid=proc.pid, log_path=str(log_file))
        finally:
            stop_process(proc)
