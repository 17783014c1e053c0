"""Per-task images: the distinct images of a task set prepared once into a shared cache before a run needs them."""
