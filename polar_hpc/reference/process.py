"""Start a reference server as a subprocess and stop it by pid (tests, ``--backend local``)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from polar_hpc.log import get_logger
from polar_hpc.util.readiness import stop_process, wait_file, wait_healthy
from polar_hpc.wire.endpoints import read_endpoint_file
from polar_hpc.wire.security import API_KEY_ENV

log = get_logger("inference.reference")


class ReferenceHandle(msgspec.Struct, kw_only=True):
    url: str
    model_dir: str
    pid: int
    log_path: str


def reference_command(
    model_dir: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    seed: int = 0,
    context_length: int | None = None,
    served_model_name: str | None = None,
    threads: int | None = None,
    ready_file: str | Path | None = None,
    python: str = sys.executable,
    first_token_delay_s: float = 0.0,
    token_delay_s: float = 0.0,
) -> list[str]:
    cmd = [python, "-m", "polar_hpc", "serve-reference", "--model", str(model_dir), "--host", host, "--port", str(port)]
    cmd += ["--seed", str(seed)]
    if context_length is not None:
        cmd += ["--context-length", str(context_length)]
    if served_model_name:
        cmd += ["--served-model-name", served_model_name]
    if threads:
        cmd += ["--threads", str(threads)]
    if ready_file is not None:
        cmd += ["--ready-file", str(ready_file)]
    if first_token_delay_s or token_delay_s:
        cmd += ["--first-token-delay", str(first_token_delay_s), "--token-delay", str(token_delay_s)]
    return cmd


@contextmanager
def start_reference_server(
    model_dir: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    seed: int = 0,
    context_length: int | None = None,
    served_model_name: str | None = None,
    threads: int | None = 1,
    log_path: str | Path | None = None,
    startup_timeout_s: float = 120.0,
    env: dict[str, str] | None = None,
    api_key: str | None = None,
    first_token_delay_s: float = 0.0,
    token_delay_s: float = 0.0,
) -> Iterator[ReferenceHandle]:
    """Run ``polar-hpc serve-reference`` until the block exits; yields once ``/health_generate`` answers 200.
    ``api_key``: the server requires it (passed in its environment, not its command line)."""
    with tempfile.TemporaryDirectory(prefix="polar-ref-") as tmp:
        ready = Path(tmp) / "ready.json"
        log_file = Path(log_path) if log_path else Path(tmp) / "server.log"
        cmd = reference_command(
            model_dir, host=host, port=port, seed=seed, context_length=context_length,
            served_model_name=served_model_name, threads=threads, ready_file=ready,
            first_token_delay_s=first_token_delay_s, token_delay_s=token_delay_s,
        )
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
