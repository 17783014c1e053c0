"""The ``polar-hpc`` command line: one module per command group, heavy imports inside each ``run``.

``main`` is here so that the console script ``polar_hpc.cli:main`` stays what it always was."""

from polar_hpc.cli.entry import main

__all__ = ["main"]
