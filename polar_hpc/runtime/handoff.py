"""The rank's end of the sandbox bridge ``bridge = "handoff"``: one socket pair per command, the listening socket
received from the sandbox, served by the rank's proxy while the command runs.

A ``network = "none"`` sandbox has only ``lo``. The shim (``uds_forward.py --handoff FD``) binds the loopback
address the harness is told to use, inside the sandbox's own network namespace, sends that listening socket over
the socket pair's sandbox end (inherited by the command as ``FD``; SCM_RIGHTS), and execs the command. The rank
accepts the sandbox's connections on it with the proxy's own server: no forwarder process, no Unix socket of the
proxy bound into any sandbox, and a listener that only this command's sandbox can reach. What arrives on the
pair is checked (one TCP listening socket, nothing else) before it is served."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Awaitable, Callable

from polar_hpc.log import get_logger

log = get_logger("runtime")

StopServing = Callable[[], Awaitable[None]]
ServeListener = Callable[[socket.socket], Awaitable[StopServing]]
"""Serves a listening socket handed out of a sandbox (the rank's proxy); returns how to stop serving it."""


def checked_listener(fds: list[int]) -> socket.socket | None:
    """The one TCP listening socket among ``fds`` (all of which are then ours: every other is closed), else None."""
    socks: list[socket.socket] = []
    for fd in fds:
        try:
            socks.append(socket.socket(fileno=fd))
        except OSError:  # not a socket
            with contextlib.suppress(OSError):
                os.close(fd)
    ok = (len(socks) == 1 and len(fds) == 1 and socks[0].family in (socket.AF_INET, socket.AF_INET6)
          and socks[0].type == socket.SOCK_STREAM
          and socks[0].getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1)
    if ok:
        socks[0].setblocking(False)
        return socks[0]
    for s in socks:
        s.close()
    return None


class Handoff:
    """One command's socket pair. ``fd``: the sandbox end's number, which the command inherits (``pass_fds``)."""

    def __init__(self) -> None:
        self.rank_end, self.sandbox_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.rank_end.setblocking(False)

    @property
    def fd(self) -> int:
        return self.sandbox_end.fileno()

    async def receive(self) -> socket.socket | None:
        """The sandbox's listening socket; None when the command ended or sent something else."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        fd = self.rank_end.fileno()

        def readable() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(fd, readable)
        try:
            await ready
        finally:
            loop.remove_reader(fd)
        try:
            _, fds, _, _ = socket.recv_fds(self.rank_end, 16, 4)
        except OSError as err:
            log.warning("sandbox bridge: receiving the listening socket: %r", err)
            return None
        listener = checked_listener(fds)
        if listener is None and fds:
            log.warning("sandbox bridge: the sandbox sent %d descriptor(s), not one TCP listening socket: ignored",
                        len(fds))
        return listener

    async def serve(self, serve_listener: ServeListener) -> None:
        """Receive the listener, serve it until cancelled (the command ended), then stop serving it."""
        listener = await self.receive()
        self.close()  # one listener a command: the pair is done with (the command holds its own copy of its end)
        if listener is None:
            return
        try:
            stop = await serve_listener(listener)
        except Exception as err:
            listener.close()
            log.warning("sandbox bridge: serving the sandbox's listener: %r", err)
            return
        try:
            await asyncio.Event().wait()
        finally:
            await stop()
            listener.close()

    def close(self) -> None:
        self.rank_end.close()
        self.sandbox_end.close()
