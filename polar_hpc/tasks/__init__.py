"""SWE task sets: import SWE-bench / SWE-Gym rows (as ``datasets`` exports them) into task rows that carry their
published image and their grading spec; the ``swebench`` package's own specs where it has them."""
