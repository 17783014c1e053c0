"""What a run produced: ``polar-hpc report``'s tables and plots, and why a session was not accepted."""
