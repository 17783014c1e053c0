"""Chat templates and tokenization without transformers, and the parsers of what the model writes."""
