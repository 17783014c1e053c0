"""Messages and records shared across processes (no I/O here)."""
