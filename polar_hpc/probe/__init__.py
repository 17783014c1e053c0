"""``polar-hpc probe HARNESS``: one oracle session on a bundled task, locally, and what it tells about the harness."""
