"""SWE task sets: import SWE-bench / SWE-Gym rows (as ``datasets`` exports them) into task rows that carry their
published image and their grading spec (``evaluate.swe_spec``); build the offline set; expand a recipe's task
source into ``Task`` structs (``source``)."""
