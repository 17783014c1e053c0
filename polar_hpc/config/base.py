"""Strict Struct base, TOML load/dump, ``--set`` overrides and readable validation errors."""

from __future__ import annotations

import tomllib
import typing
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from polar_hpc.errors import PolarError

T = TypeVar("T", bound=msgspec.Struct)


class StrictStruct(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, omit_defaults=False):
    """Base of every config section: unknown keys are errors, fields are keyword-only."""


class ConfigError(PolarError, ValueError):
    """A recipe, override or resolved config that does not decode; the message names path and choices."""


def _field_types(tp: Any) -> dict[str, Any]:
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return typing.get_type_hints(tp)
    return {}


def _unwrap(tp: Any) -> list[Any]:
    """The Struct / Literal members of an annotation such as ``X | None`` or ``list[X]``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return [m for a in typing.get_args(tp) for m in _unwrap(a)]
    if origin in (list, tuple):
        args = typing.get_args(tp)
        return _unwrap(args[0]) if args else []
    if origin is dict:
        args = typing.get_args(tp)
        return _unwrap(args[1]) if len(args) == 2 else []
    return [tp]


def _type_at(root: type, path: list[str]) -> Any:
    tp: Any = root
    for part in path:
        if part.isdigit():
            continue
        nxt = None
        for cand in _unwrap(tp):
            hints = _field_types(cand)
            if part in hints:
                nxt = hints[part]
                break
        if nxt is None:
            return None
        tp = nxt
    return tp


def _describe_choices(tp: Any) -> str:
    for cand in _unwrap(tp):
        if typing.get_origin(cand) is typing.Literal:
            return "valid choices: " + ", ".join(repr(a) for a in typing.get_args(cand))
        hints = _field_types(cand)
        if hints:
            return "valid keys: " + ", ".join(sorted(hints))
    return ""


_MISSING = object()


def _value_at(data: Any, path: list[str]) -> Any:
    node = data
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _override_for(overrides: dict[tuple[str, ...], str], path: list[str]) -> str | None:
    """The ``--set`` item that put a value at ``path`` (or above or below it), if one did."""
    hit = None
    if not path:
        return None
    for key, item in overrides.items():
        n = min(len(key), len(path))
        if tuple(path[:n]) == key[:n]:
            hit = item
    return hit


def _friendly(err: msgspec.ValidationError, root: type, source: str, data: Any = None,
              overrides: dict[tuple[str, ...], str] | None = None) -> ConfigError:
    """A one-line message: where (the file, or the ``--set`` that caused it), the TOML path, the bad value."""
    msg = str(err)
    where = ""
    path: list[str] = []
    if " - at `$" in msg:
        msg, _, raw = msg.partition(" - at `$")
        raw = raw.rstrip("`")
        path = [p for p in raw.replace("[", ".").replace("]", "").split(".") if p]
        where = ".".join(path)
    hint = ""
    if msg.startswith("Object contains unknown field"):
        hint = _describe_choices(_type_at(root, path))
        key = msg.split("`")[1] if "`" in msg else "?"
        where = ".".join([*path, key])
        msg = f"unknown key {key!r}"
    elif msg.startswith("Object missing required field"):
        key = msg.split("`")[1] if "`" in msg else "?"
        where = ".".join([*path, key])
        msg = f"missing required key {key!r}"
    elif "Invalid enum value" in msg:
        hint = _describe_choices(_type_at(root, path))
    if path and not msg.startswith(("unknown key", "missing required key")):
        value = _value_at(data, path)
        if value is not _MISSING:
            where = f"{where} = {_show(value)}"
    blamed = _override_for(overrides or {}, [*path, *([where.split(".")[-1]] if msg.startswith("unknown key") else [])])
    if blamed is not None:
        source = f"--set {blamed}"
    text = f"{source}: {where or '<top level>'}: {msg}"
    if hint:
        text += f" ({hint})"
    return ConfigError(text)


def decode(data: dict[str, Any], tp: type[T], source: str = "<config>",
           overrides: dict[tuple[str, ...], str] | None = None) -> T:
    """Decode strictly; ``overrides`` (TOML path -> the ``--set`` item) lets errors blame the right place."""
    try:
        return msgspec.convert(data, tp, strict=True)
    except msgspec.ValidationError as err:
        raise _friendly(err, tp, source, data, overrides) from None


def read_toml(path: str | Path,
              overrides: list[str] | None = None) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """A TOML file as builtins with ``--set`` overrides applied, and which path each override set."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such recipe file") from None
    except IsADirectoryError:
        raise ConfigError(f"{p}: is a directory, not a recipe file") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{p}: not valid TOML: {err}") from None
    applied: dict[tuple[str, ...], str] = {}
    for item in overrides or []:
        applied[tuple(apply_override(data, item))] = item
    return data, applied


def parse_toml_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_override(data: dict[str, Any], item: str) -> list[str]:
    """Apply one ``a.b.c=value`` override in place (a TOML literal or a bare string); returns the key path."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {item!r}: expected KEY=VALUE such as gateway.num_ranks=2")
    parts = key.strip().split(".")
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--set {item!r}: {part!r} is a value, not a table")
        node = child
    node[parts[-1]] = parse_toml_value(value.strip())
    return parts


def to_dict(obj: msgspec.Struct) -> dict[str, Any]:
    """Plain builtins, ``None`` dropped (TOML has no null)."""
    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if v is not None}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    out: dict[str, Any] = strip(msgspec.to_builtins(obj))
    return out


def dump_toml(obj: msgspec.Struct) -> str:
    import tomli_w

    return tomli_w.dumps(to_dict(obj))
