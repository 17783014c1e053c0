"""``polar-hpc train sft``: TRL's ``SFTTrainer`` on the token-level SFT export (``run`` for the Python API)."""
