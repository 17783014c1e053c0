"""After a session's model calls: records → trajectory (builder) → evaluation (rewards) → fidelity check, one
path for the gateway's stage pools and for ``polar-hpc build`` (an offline rebuild of saved records)."""
