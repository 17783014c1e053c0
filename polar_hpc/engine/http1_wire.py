"""The bytes of the HTTP/1.1 client (``engine.http1``): a POST request's, and a response head's and whole
response's parsing (``Content-Length`` or chunked). Pure functions: no socket, no event loop."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit


def parse_response(buf: bytearray) -> tuple[int, bytes, bool] | None:
    """``(status, body, keep_alive)`` once ``buf`` holds a whole response (consumed from it), else None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > 65536:
            raise ValueError("response headers over 64 KiB")
        return None
    status, length, chunked, keep_alive = parse_head(bytes(buf[:end]))
    start = end + 4
    if chunked:
        body = bytearray()
        pos = start
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size = int(bytes(buf[pos:eol]).split(b";", 1)[0], 16)
            if size == 0:
                trailer_end = buf.find(b"\r\n\r\n", eol)
                if trailer_end < 0:
                    return None
                del buf[: trailer_end + 4]
                return status, bytes(body), keep_alive
            if len(buf) < eol + 2 + size + 2:
                return None
            body += buf[eol + 2 : eol + 2 + size]
            pos = eol + 2 + size + 2
    if length is None:
        if status in (204, 304) or 100 <= status < 200:
            length = 0
        else:
            raise ValueError("response without Content-Length or chunked encoding")
    if len(buf) < start + length:
        return None
    body_bytes = bytes(buf[start : start + length])
    del buf[: start + length]
    return status, body_bytes, keep_alive


def parse_head(raw: bytes) -> tuple[int, int | None, bool, bool]:
    """``(status, content_length, chunked, keep_alive)`` of a response head (without its blank line)."""
    lines = raw.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ValueError(f"bad status line {lines[0][:80]!r}")
    status = int(parts[1])
    length: int | None = None
    chunked = False
    keep_alive = parts[0] == b"HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        value = value.strip()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name == b"connection":
            if value.lower() == b"close":
                keep_alive = False
            elif value.lower() == b"keep-alive":
                keep_alive = True
    return status, length, chunked, keep_alive


@lru_cache(maxsize=256)
def _target(url: str) -> tuple[tuple[str, int], str]:
    """``(host, port)`` of ``url`` and the request's first lines up to its Content-Length."""
    parts = urlsplit(url)
    line = f"POST {parts.path or '/'}{'?' + parts.query if parts.query else ''} HTTP/1.1"
    return (parts.hostname or "", parts.port or 80), f"{line}\r\nHost: {parts.netloc}\r\nContent-Length: "


def request_bytes(url: str, body: bytes, headers: dict[str, str]) -> tuple[tuple[str, int], bytes]:
    """``(host, port)`` of ``url`` and the whole request: head and ``body``."""
    key, start = _target(url)
    head = "".join([start, str(len(body)), *[f"\r\n{k}: {v}" for k, v in headers.items()], "\r\n\r\n"])
    return key, head.encode("latin-1") + body
