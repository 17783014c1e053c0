"""A Qwen3-coder ``<parameter=…>`` value (always text) typed by the tool's JSON schema.

The type is the schema's ``type`` (a string, or a list: its first non-null member), or, for ``anyOf`` / ``oneOf``
(every Pydantic ``Optional[...]``), the first non-null option's. ``null`` / ``None`` is null but for a string
that is not nullable (then it is the text). Integers keep every digit (``int``, never through ``float``); a number
written as an integer stays one. Objects, arrays and untyped-but-declared values are JSON, else a Python literal
(``{'a': 1}``, ``True``, ``None``: what models trained on a Python-rendering template write), else a JSON string
holding either; what fits none stays text. A parameter the schema does not declare, or declares without a type,
stays text.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

import msgspec

_DECODE = msgspec.json.Decoder()
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_NULLS = ("null", "None")
_UNDECLARED = object()


def schema_type(schema: Any) -> tuple[str | None, bool]:
    """(the value's type, whether null is allowed); type None: any JSON value."""
    if not isinstance(schema, dict):
        return None, False
    kind = schema.get("type")
    if isinstance(kind, list):
        names = [k for k in kind if isinstance(k, str)]
        real = [k for k in names if k != "null"]
        return (real[0] if real else None), "null" in names
    if isinstance(kind, str):
        return kind, kind == "null"
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            types = [schema_type(o) for o in options]
            real = [t for t, _ in types if t not in (None, "null")]
            nullable = any(t == "null" or n for t, n in types)
            return (real[0] if real else None), nullable
    if "properties" in schema:
        return "object", False
    return None, False


def _literal(text: str) -> Any:
    """JSON, else a Python literal; ``_UNDECLARED`` when neither."""
    try:
        return _DECODE.decode(text)
    except msgspec.DecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _UNDECLARED


def _structured(text: str, want: type | None) -> Any:
    value = _literal(text)
    if isinstance(value, str) and want is not None:  # a JSON string holding the value (a double-encoding template)
        value = _literal(value.strip())
    if value is _UNDECLARED or isinstance(value, (set, frozenset, complex, bytes)):
        return _UNDECLARED
    if want is not None and not isinstance(value, want):
        return _UNDECLARED
    try:
        msgspec.json.encode(value)
    except (TypeError, OverflowError, ValueError):
        return _UNDECLARED
    return value


def _finite(text: str) -> float | int | None:
    if _INT.fullmatch(text):
        return int(text)
    if not _NUMBER.fullmatch(text):
        return None
    f = float(text)
    return f if math.isfinite(f) else None


def typed_value(raw: str, schema: Any, declared: bool) -> Any:
    """``raw`` (the text between the tags, one wrapping newline each side already removed) as its schema's type."""
    if not declared:
        return raw
    kind, nullable = schema_type(schema)
    text = raw.strip()
    if kind in (None, "string"):
        return None if nullable and text in _NULLS else raw
    if text in _NULLS:
        return None
    if kind == "integer":
        return int(text) if _INT.fullmatch(text) else raw
    if kind in ("number", "float", "double"):
        num = _finite(text)
        return raw if num is None else num
    if kind == "boolean":
        return {"true": True, "false": False}.get(text.lower(), raw)
    if kind == "null":
        return None if text in _NULLS else raw
    want: type | None = {"object": dict, "array": list}.get(kind)
    value = _structured(text, want)
    return raw if value is _UNDECLARED else value
