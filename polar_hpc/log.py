"""The one logger of the package: ``polar_hpc`` (children per component)."""

from __future__ import annotations

import logging
import os
import sys

logger = logging.getLogger("polar_hpc")


def get_logger(component: str | None = None) -> logging.Logger:
    return logger.getChild(component) if component else logger


class _Stderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is now: a handler made once must not keep a stream that was since closed
    (a writer thread logging after a CLI call returned, pytest's capture swapped between calls)."""

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


def setup_logging(level: str | None = None) -> None:
    """Configure the root handler once (CLI entry points call this; libraries never do)."""
    lvl = (level or os.environ.get("POLAR_LOG_LEVEL") or "INFO").upper()
    if not logger.handlers:
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(lvl)
    logger.propagate = False
