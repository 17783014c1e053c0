"""The chat templates' sandbox (``chat.jinja.ChatSandbox``) with its shortcuts gives what jinja2's own
immutable sandbox gives, for reads that take a shortcut and for those the sandbox refuses."""

from __future__ import annotations

from typing import Any

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from polar_hpc.chat.jinja import KeptDict, _TemplateNamespace, environment, kept

EXPRESSIONS = [
    "{{ m.content }}|{{ m.role }}|{{ m.missing is defined }}|{{ m.missing }}",
    "{{ m.items() | list }}|{{ m.get('role') }}|{{ m.keys() | list }}",  # dict methods, not keys
    "{{ m.content.startswith('He') }}|{{ m.content.split(' ') }}|{{ m.content.nope is defined }}",
    "{{ 'a{0}b'.format(m.role) }}|{{ '{x}'.format_map({'x': 1}) }}",
    "{% set ns = namespace(a=1, f='x{0}'.format) %}{% set ns.a = ns.a + 1 %}{{ ns.a }}|{{ ns.b is defined }}"
    "|{{ ns.f(2) }}",
    "{{ m.__class__ }}|{{ m.content.__class__ }}|{{ m._x is defined }}",
    "{{ m['content'] }}|{{ m['nope'] is defined }}|{{ items | length }}|{{ items[0].content[:2] }}",
    "{{ m['_json'] is defined }}|{{ m._json is defined }}|{{ m['items']() | list }}|{{ m['_json'].x }}",
]
UNSAFE = [
    "{{ m.clear() }}",
    "{{ items.append(1) }}",
    "{{ m.content.__class__.__mro__ }}",
    "{{ ''.format.__globals__ }}",
    "{% set ns = namespace() %}{% set ns._secret = 1 %}",
]


def _plain() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["namespace"] = _TemplateNamespace
    return env


def _render(env: jinja2.Environment, source: str, wrap: Any = dict) -> Any:
    m = wrap({"role": "user", "content": "Hello there", "_x": 1})
    try:
        return env.from_string(source).render(m=m, items=[m, wrap(m)])
    except (SecurityError, jinja2.exceptions.UndefinedError, TypeError) as err:
        return f"{type(err).__name__}: {err}"


@pytest.mark.parametrize("source", EXPRESSIONS + UNSAFE)
def test_shortcuts_render_what_the_sandbox_renders(source: str) -> None:
    assert _render(environment(), source) == _render(_plain(), source)


@pytest.mark.parametrize("source", EXPRESSIONS + UNSAFE)
def test_a_kept_dict_reads_as_a_dict(source: str) -> None:  # only a refusal's message names its class
    got = _render(environment(), source, KeptDict)
    assert got.replace("'KeptDict' object", "'dict' object") == _render(_plain(), source)


def test_tojson_of_a_kept_dict_is_json_dumps_of_it() -> None:
    data = {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "number", "default": 0.5}}},
            "note": "日本 \u2028 </script>", "flags": [True, None, 1]}
    k = kept(data)
    assert type(k) is KeptDict and type(k["parameters"]["properties"]) is KeptDict and k == data
    calls = ["{{ t | tojson }}", "{{ t | tojson(indent=4) }}", "{{ t | tojson(indent='  ', sort_keys=true) }}",
             "{{ t | tojson(ensure_ascii=true) }}", "{{ t | tojson(ensure_ascii=1) }}",
             "{{ t | tojson(separators=[',', ':']) }}", "{{ t | tojson(separators=(',', ':')) }}",
             "{{ t.parameters | tojson }}", "{{ t.parameters.properties | tojson(indent=2) }}"]
    env = environment()
    for source in calls:
        want = env.from_string(source).render(t=data)
        assert env.from_string(source).render(t=k) == want, source
        assert env.from_string(source).render(t=k) == want, source  # kept
    assert k._json  # the texts were kept


@pytest.mark.parametrize("source", UNSAFE)
def test_unsafe_reads_stay_refused(source: str) -> None:
    out = _render(environment(), source)
    assert out == "" or out.startswith("SecurityError"), out  # an unsafe read prints nothing or raises


def test_template_globals_are_one_plain_dict_with_every_global() -> None:
    env = environment()
    compiled = env.from_string("{{ g }}|{{ raise_exception is defined }}|{{ namespace(a=1).a }}|{{ range(2) | list }}",
                               globals={"g": "own"})
    assert type(compiled.globals) is dict and compiled.globals == {**env.globals, "g": "own"}
    assert compiled.render() == "own|True|1|[0, 1]"
    assert "g" not in env.globals  # a template's own globals stay its own
