"""Task sets: import SWE-bench / SWE-Gym rows (as ``datasets`` exports them) into task rows that carry their
published image and their grading spec (``evaluate.swe_spec``), or Harbor-format task folders (``harbor``); build
the offline set; expand a recipe's task source into ``Task`` structs (``source``)."""

from typing import Literal

Dataset = Literal["swe-bench", "swe-gym"]
"""Row sets ``tasks import`` reads (``importer``)."""
HARBOR = "harbor"
"""``tasks import harbor``: Harbor-format task folders (``harbor``)."""
