"""The ``polar-hpc`` command line: one module per command group, heavy imports inside ``run``."""
