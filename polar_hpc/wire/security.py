"""Per-run CURVE keys and the run token, kept in ``run_dir/secrets/`` (mode 0600).

The coordinator holds the server keypair and lets in only the run's client public key (a ZAP handler);
gateways, trainers and the CLI use the client keypair. Anyone who can read the run dir's secrets is the run's
owner; nobody else on a shared cluster can submit, read or stop anything.
"""

from __future__ import annotations

import os
import secrets as _secrets
from pathlib import Path

import msgspec
import zmq
import zmq.asyncio
from zmq.auth.asyncio import AsyncioAuthenticator

from polar_hpc.errors import PolarError
from polar_hpc.log import get_logger
from polar_hpc.util.fs import write_atomic
from polar_hpc.wire.rundir import CONTROL_KEYS, RunDir

log = get_logger("wire.security")

def _token() -> str:
    return _secrets.token_urlsafe(32)

API_KEY_ENV = "POLAR_INFERENCE_API_KEY"
"""The run token, as the inference servers (SGLang through ``sglang_launch``, the reference server) read it: from the
environment, never a command line."""


class RunKeys(msgspec.Struct, kw_only=True, frozen=True):
    server_public: str
    server_secret: str
    client_public: str
    client_secret: str
    token: str
    """Bearer token of the HTTP facade."""


class SecretsError(PolarError, RuntimeError):
    pass


def ensure_keys(run_dir: str | Path) -> RunKeys:
    """Create the keys in a run's ``secrets/`` folder once (idempotent; a restarted coordinator reuses them).
    The HTTP token is ``secrets/run_token`` (the launcher may have written it already)."""
    run = RunDir(run_dir)
    path = run.secrets / CONTROL_KEYS
    if path.exists():
        return load_keys(run.root)
    run.secrets.mkdir(parents=True, exist_ok=True)
    os.chmod(run.secrets, 0o700)
    token = run.run_token()
    if token is None:
        token = _token()
        write_atomic(run.run_token_path, token.encode(), 0o600)
    spub, ssec = zmq.curve_keypair()
    cpub, csec = zmq.curve_keypair()
    keys = RunKeys(
        server_public=spub.decode(), server_secret=ssec.decode(),
        client_public=cpub.decode(), client_secret=csec.decode(), token=token,
    )
    write_atomic(path, msgspec.json.encode(keys), 0o600)
    return keys


def load_keys(run_dir: str | Path) -> RunKeys:
    path = RunDir(run_dir).secrets / CONTROL_KEYS
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SecretsError(
            f"{path}: no control-plane keys; the coordinator creates them when it starts (is this the run dir?)"
        ) from None
    except PermissionError:
        raise SecretsError(f"{path}: not readable by this user; only the run's owner may use the run") from None
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise SecretsError(f"{path}: mode {mode:o} lets other users read the run's keys; expected 600")
    return msgspec.json.decode(data, type=RunKeys)


def configure_server(sock: zmq.Socket, keys: RunKeys) -> None:
    sock.curve_server = True
    sock.curve_secretkey = keys.server_secret.encode()
    sock.curve_publickey = keys.server_public.encode()


def configure_client(sock: zmq.Socket, keys: RunKeys) -> None:
    sock.curve_serverkey = keys.server_public.encode()
    sock.curve_publickey = keys.client_public.encode()
    sock.curve_secretkey = keys.client_secret.encode()


class _OnlyRunClient:
    def __init__(self, client_public: str) -> None:
        self.allowed = client_public.encode()

    def callback(self, domain: str, key: bytes) -> bool:
        ok = key == self.allowed
        if not ok:
            log.warning("refused a control-plane connection with an unknown CURVE key %s", key[:8].decode())
        return ok


def start_authenticator(ctx: zmq.asyncio.Context, keys: RunKeys) -> AsyncioAuthenticator:
    """ZAP handler on ``ctx`` admitting only the run's client key; ``.stop()`` it before ``ctx.term()``."""
    auth = AsyncioAuthenticator(ctx)
    auth.start()
    auth.configure_curve_callback("*", credentials_provider=_OnlyRunClient(keys.client_public))
    return auth


def run_api_key(run_dir: str | Path) -> str | None:
    """The key the run's inference servers require: the run token (``RUN_DIR/secrets/run_token``), None without
    one (a run dir made by hand; the servers then accept any caller)."""
    run = RunDir(run_dir)
    token = run.run_token()
    if token is None:
        log.warning("%s does not exist: this run's inference servers take no API key", run.run_token_path)
    return token
