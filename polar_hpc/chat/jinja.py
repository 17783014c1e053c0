"""The jinja2 environment chat templates are written for, set up as transformers' ``apply_chat_template`` does.

transformers 5.x (``utils/chat_template_utils.py``): ImmutableSandboxedEnvironment with trim_blocks and
lstrip_blocks, the loopcontrols extension and a ``{% generation %}`` block tag (rendered as its body here: we
don't compute assistant masks), a ``tojson`` filter that is plain ``json.dumps`` (no HTML escaping, key order
kept), globals ``raise_exception``, ``strftime_now``, ``dict`` and a ``namespace`` that refuses ``_`` names.
"""

from __future__ import annotations

import json
import types
from collections.abc import MutableMapping
from datetime import datetime
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.parser
import jinja2.runtime
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationBlock(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: marks assistant text for masks; renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

    def _render_body(self, caller: Any) -> str:
        return str(caller())


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


class KeptDict(dict[Any, Any]):
    """A dict of data kept across renders (a tools' template form, never changed): to a template it is a plain
    ``dict`` (no attribute of its own to read), and its ``tojson`` is computed once per set of arguments."""

    __slots__ = ("_json",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._json: dict[tuple[Any, ...], str] = {}


def kept(value: Any) -> Any:
    """``value`` (plain data, as ``chat.messages.plain`` gives) with every dict inside made a :class:`KeptDict`."""
    if type(value) is dict:
        return KeptDict({k: kept(v) for k, v in value.items()})
    if type(value) is list:
        return [kept(v) for v in value]
    return value


def _tojson(
    x: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None, sort_keys: bool = False
) -> str:
    if type(x) is KeptDict:
        args = (ensure_ascii, indent, separators, sort_keys)
        key = (*args, *map(type, args))  # True and 1, 4 and 4.0 are other keys
        try:
            return x._json[key]
        except KeyError:
            out = x._json[key] = json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                                            sort_keys=sort_keys)
            return out
        except TypeError:  # unhashable arguments (separators given as a list): not kept
            pass
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


class _TemplateDict:
    """``dict(...)`` for templates without exposing the real type."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


def _check_name(name: Any) -> None:
    if isinstance(name, str) and name.startswith("_"):
        raise jinja2.exceptions.SecurityError(
            f"Chat templates cannot store underscore-prefixed attributes on a namespace, but got {name!r}."
        )


class _TemplateNamespace(jinja2.utils.Namespace):
    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 (jinja's Namespace signature trick)
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for name in attrs:
            _check_name(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _check_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)


_DICT_ATTRIBUTES = frozenset(dir(dict))
_STR_FORMATTERS = ("format", "format_map")
_BUILTIN_METHOD = types.BuiltinMethodType


class ChatSandbox(ImmutableSandboxedEnvironment):
    """jinja2's immutable sandbox with shortcuts for what chat templates read most: a key of a plain ``dict``
    (``message.content``), a method of a plain ``str`` (``content.startswith``), an attribute of the template's
    ``namespace``, and calling a builtin method. Each gives what the sandbox itself gives (a ``dict`` has no
    attribute of that name, so the sandbox falls back to the key; a ``str`` method or namespace attribute not
    starting with ``_`` is never unsafe, ``format`` still goes through the sandbox; a builtin method cannot be
    marked unsafe), without its exception and checks: about a third of a render. A :class:`KeptDict` reads as a
    ``dict`` (its one slot, ``_json``, would otherwise be an unsafe attribute where a dict has a key or nothing)."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        t = type(obj)
        if (t is dict or t is KeptDict) and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        if t is str and not attribute.startswith("_") and attribute not in _STR_FORMATTERS:
            try:
                return getattr(obj, attribute)
            except AttributeError:
                return self.undefined(obj=obj, name=attribute)
        if t is _TemplateNamespace and not attribute.startswith("_"):
            try:
                value = getattr(obj, attribute)
            except AttributeError:
                return super().getattr(obj, attribute)
            fmt = self.wrap_str_format(value)
            return value if fmt is None else fmt
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        if type(obj) is KeptDict:
            try:
                return obj[argument]
            except (TypeError, LookupError):  # what a dict gives (the sandbox would find the slot of a KeptDict)
                return super().getitem(dict(obj), argument)
        return super().getitem(obj, argument)

    def call(self, context: jinja2.runtime.Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        if type(obj) is _BUILTIN_METHOD:
            return context.call(obj, *args, **kwargs)
        return super().call(context, obj, *args, **kwargs)

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        """A template's globals as one plain dict, not jinja2's ``ChainMap`` over the environment's: every render
        copies them into its context, and a ``ChainMap`` is copied key by key in Python (a fifth of a short
        render). Same lookups, as neither is changed after the environment is set up."""
        return {**self.globals, **(d or {})}


@lru_cache(maxsize=1)
def environment() -> ImmutableSandboxedEnvironment:
    env = ChatSandbox(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _TemplateDict()
    env.globals["namespace"] = _TemplateNamespace
    return env


@lru_cache(maxsize=64)
def compile_template(source: str) -> jinja2.Template:
    """Compile once per distinct template text."""
    try:
        return environment().from_string(source)
    except jinja2.exceptions.TemplateSyntaxError as err:
        raise ValueError(f"chat template does not compile: {err.message} (template line {err.lineno})") from err
