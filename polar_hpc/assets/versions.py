"""The one place that pins the versions of outside inference software the project speaks to."""

SGLANG_VERSION = "0.5.23"
"""SGLang release whose /generate schema (``sglang/api/v1/api_types.py``) the engine and reference server follow."""
