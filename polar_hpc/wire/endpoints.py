"""Rendezvous through the run dir: a component publishes ``endpoints/<name>.json`` once it is ready.

Files are written under a temporary name and published with ``os.replace``, so a reader sees either no
file or a complete one. Names: ``inference-<N>`` (one per inference server), ``coordinator``, ...
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import msgspec

from polar_hpc.errors import PolarError
from polar_hpc.util.fs import write_atomic
from polar_hpc.wire.rundir import ENDPOINTS


class Endpoint(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    url: str
    """Base URL (``http://host:port``) or a ZeroMQ address (``tcp://host:port``)."""
    pid: int
    host: str
    started_at: float
    """Wall-clock (``time.time()``) when the component became ready."""
    kind: str = ""
    """``sglang``, ``reference``, ``coordinator``, ..."""
    port: int | None = None
    model: str | None = None
    served_model_name: str | None = None
    log_path: str | None = None
    job_id: str | None = None
    protocol: int | None = None
    """The control protocol version (``coordinator``)."""
    http_url: str | None = None
    """The coordinator's HTTP facade, when it runs one."""


class EndpointTimeout(PolarError, TimeoutError):
    """Waited for endpoint files that did not all appear before the deadline."""

    exit_code = 1


def endpoint_path(run_dir: str | os.PathLike[str], name: str) -> Path:
    return Path(run_dir) / ENDPOINTS / f"{name}.json"


def write_endpoint_file(path: str | os.PathLike[str], endpoint: Endpoint) -> Path:
    """Write ``endpoint`` to ``path`` atomically (temp file in the same dir, fsync, ``os.replace``)."""
    return write_atomic(path, msgspec.json.encode(endpoint))


def write_endpoint(run_dir: str | os.PathLike[str], endpoint: Endpoint) -> Path:
    return write_endpoint_file(endpoint_path(run_dir, endpoint.name), endpoint)


def read_endpoint_file(path: str | os.PathLike[str]) -> Endpoint:
    path = Path(path)
    try:
        return msgspec.json.decode(path.read_bytes(), type=Endpoint)
    except msgspec.DecodeError as err:
        raise ValueError(f"endpoint file {path} does not hold an Endpoint: {err}") from None


def read_endpoint(run_dir: str | os.PathLike[str], name: str) -> Endpoint | None:
    """The published endpoint ``name``; None until it is published. A file that is not an Endpoint: ValueError."""
    try:
        return read_endpoint_file(endpoint_path(run_dir, name))
    except FileNotFoundError:
        return None


def read_endpoints(run_dir: str | os.PathLike[str], prefix: str = "") -> list[Endpoint]:
    """Every published endpoint whose name starts with ``prefix``, sorted by name."""
    folder = Path(run_dir) / ENDPOINTS
    if not folder.is_dir():
        return []
    return [read_endpoint_file(p) for p in sorted(folder.glob(f"{prefix}*.json"))]


def remove_endpoint(run_dir: str | os.PathLike[str], name: str) -> None:
    endpoint_path(run_dir, name).unlink(missing_ok=True)


def wait_endpoints(
    run_dir: str | os.PathLike[str], names: list[str], *, timeout_s: float, poll_s: float = 0.5
) -> list[Endpoint]:
    """Block until every named endpoint is published; raises :class:`EndpointTimeout` naming the missing ones."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = {n: read_endpoint(run_dir, n) for n in names}
        missing = [n for n, ep in found.items() if ep is None]
        if not missing:
            return [ep for ep in found.values() if ep is not None]
        if time.monotonic() >= deadline:
            present = sorted(p.stem for p in (Path(run_dir) / ENDPOINTS).glob("*.json"))
            raise EndpointTimeout(
                f"waited {timeout_s:.0f}s for endpoints {missing} in {Path(run_dir) / ENDPOINTS}; "
                f"published so far: {present or 'none'}"
            )
        time.sleep(poll_s)


def advertised_host() -> str:
    """This node's name as other nodes should reach it (``POLAR_HPC_ADVERTISE_HOST`` overrides)."""
    return os.environ.get("POLAR_HPC_ADVERTISE_HOST") or socket.gethostname()
