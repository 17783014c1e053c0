"""In-sandbox TCP→Unix-socket forwarder, then exec of the real command; or the hand-off shim.

Standalone (stdlib only, any Python 3.8+): bound read-only into sandboxes and run as
``python3 uds_forward.py --listen 127.0.0.1:PORT --socket /polar/proxy.sock -- CMD ARGS...``.
The listening socket is bound before the fork, so connections made by CMD right away queue in the
backlog. The forwarder child dies with CMD (PR_SET_PDEATHSIG) and with the sandbox's pid namespace.

``python3 uds_forward.py --listen 127.0.0.1:PORT --handoff FD -- CMD ARGS...``: bind and listen, send the
listening socket over the inherited Unix socket ``FD`` (SCM_RIGHTS; the gateway rank serves it with its proxy),
close both, exec CMD. Nothing of this process stays: CMD replaces it, and connections queue in the backlog
until the rank accepts them.
"""

from __future__ import annotations

import array
import ctypes
import os
import signal
import socket
import sys
import threading

PR_SET_PDEATHSIG = 1
BACKLOG = 128


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _serve_one(conn: socket.socket, path: str) -> None:
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(path)
    except OSError as err:
        sys.stderr.write(f"uds_forward: cannot connect to {path}: {err}\n")
        conn.close()
        up.close()
        return
    t = threading.Thread(target=_pipe, args=(up, conn), daemon=True)
    t.start()
    _pipe(conn, up)
    t.join()
    conn.close()
    up.close()


def serve(listener: socket.socket, path: str) -> None:
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_serve_one, args=(conn, path), daemon=True).start()


def _listen(listen: str) -> socket.socket:
    host, _, port = listen.rpartition(":")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, int(port)))
    listener.listen(BACKLOG)
    return listener


def handoff(listen: str, fd: int, cmd: list[str]) -> int:
    listener = _listen(listen)
    channel = socket.socket(fileno=fd)
    channel.sendmsg([b"L"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [listener.fileno()]))])
    channel.close()
    listener.close()
    os.execvp(cmd[0], cmd)
    return 127


def main(argv: list[str]) -> int:
    # no argparse: it costs ~10 ms of start-up on every sandboxed command
    usage = ("usage: uds_forward.py --listen HOST:PORT (--socket PATH | --handoff FD) -- CMD [ARGS...]")
    if len(argv) < 6 or argv[0] != "--listen" or argv[2] not in ("--socket", "--handoff") or argv[4] != "--":
        sys.stderr.write(f"{usage}\ngot: {argv!r}\n")
        return 2
    if argv[2] == "--handoff":
        return handoff(argv[1], int(argv[3]), argv[5:])
    path, cmd = argv[3], argv[5:]
    listener = _listen(argv[1])
    parent = os.getpid()
    if os.fork() == 0:
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
        if os.getppid() != parent:
            os._exit(0)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        try:
            serve(listener, path)
        finally:
            os._exit(0)
    listener.close()
    os.execvp(cmd[0], cmd)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
