"""polar-hpc: run agent harnesses unchanged on Slurm and record token-faithful trajectories."""

__version__ = "0.1.0"
