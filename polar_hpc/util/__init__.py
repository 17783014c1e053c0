"""Small helpers shared across components (they import nothing of polar_hpc but its logger)."""
