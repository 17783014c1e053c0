"""Process limits a component sets for itself at start."""

from __future__ import annotations

import resource


def raise_open_files() -> tuple[int, int]:
    """Raise this process's soft ``RLIMIT_NOFILE`` to its hard limit (a gateway rank holds ~6 descriptors a
    session in flight: a site's default soft limit of 1,024 would stop it near 150); (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == hard:  # nothing to raise (an infinite NOFILE is not allowed)
        return soft, soft
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return soft, hard
