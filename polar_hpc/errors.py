"""``PolarError``: the base of the errors polar-hpc raises about what it was given, with the exit code
``polar-hpc`` answers with when one reaches its command line (one line on stderr, no traceback).

Subclasses so far: ``config.ConfigError``, ``harness.HarnessError``, ``tasks.importer.TaskImportError``,
``probe.run.ProbeError`` (bad input: 2) and ``assets.AssetError`` (an asset missing, corrupt or not fetched: 1).
Other exception classes keep their own bases until they move under this one.
"""

from __future__ import annotations

from typing import ClassVar


class PolarError(Exception):
    exit_code: ClassVar[int] = 2
    """What ``polar-hpc`` exits with (2: input the user can fix)."""
