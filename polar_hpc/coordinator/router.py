"""The coordinator's ROUTER socket: its options, CURVE, and a port kept across restarts when it is free."""

from __future__ import annotations

import zmq
import zmq.asyncio

from polar_hpc.log import get_logger
from polar_hpc.wire.security import RunKeys, configure_server

log = get_logger("coordinator")


def open_router(ctx: zmq.asyncio.Context, keys: RunKeys, max_frame_bytes: int) -> zmq.asyncio.Socket:
    sock = ctx.socket(zmq.ROUTER)
    sock.linger = 0
    sock.sndhwm = sock.rcvhwm = 100_000
    sock.setsockopt(zmq.ROUTER_MANDATORY, 0)
    sock.maxmsgsize = max_frame_bytes  # zmq drops the peer's connection instead of receiving it
    configure_server(sock, keys)
    return sock


def bind_router(sock: zmq.asyncio.Socket, host: str, want: int | None) -> int:
    """Binds ``want`` (0 or None: any port), or a new port when it is taken; returns the port."""
    if want:
        try:
            sock.bind(f"tcp://{host}:{want}")
            return want
        except zmq.ZMQError as err:
            log.warning("cannot bind port %d again (%s); taking a new one", want, err)
    return sock.bind_to_random_port(f"tcp://{host}")
