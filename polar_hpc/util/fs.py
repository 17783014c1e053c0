"""Atomic file writes (readers see either the old file or the complete new one, never a partial write) and file
names made from ids."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path


def safe_name(text: str) -> str:
    """``text`` as a file name: every character but ``A-Za-z0-9._-`` becomes ``_`` (never empty)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text) or "_"


def unique_name(text: str, max_len: int = 80) -> str:
    """A readable file name for ``text`` that stays distinct where :func:`safe_name` makes two collide: its first
    ``max_len`` characters, sanitized, and 8 hex digits of ``text``'s digest."""
    return f"{safe_name(text)[:max_len]}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def write_atomic(path: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> Path:
    """Write ``data`` to ``path`` through a temp file in the same folder (created with ``mode``), fsync, rename.

    The parent folder is created if missing. ``mode`` is applied with ``fchmod`` too, so the umask cannot widen
    or narrow it (secrets: ``0o600``).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, path)
    return path
