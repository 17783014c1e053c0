"""No constructor takes more than ``MAX_PARAMS`` parameters: a component with more knobs takes one settings Struct,
passed whole (``ProxySettings``, ``EngineSettings``, ``ReferenceOptions``). msgspec Structs and dataclasses are the
settings themselves and are not counted (they have no hand-written ``__init__``)."""

from __future__ import annotations

import ast
from pathlib import Path

import polar_hpc

MAX_PARAMS = 8
"""Besides ``self``; ``*args`` and ``**kwargs`` count one each."""
ROOT = Path(polar_hpc.__file__).parent


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    return len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) - 1 + (a.vararg is not None) + (a.kwarg is not None)


def _is_settings(cls: ast.ClassDef) -> bool:
    names = [ast.unparse(b) for b in (*cls.bases, *cls.decorator_list)]
    return any("Struct" in n or "dataclass" in n for n in names)


def test_no_constructor_takes_more_than_eight_parameters() -> None:
    over = []
    for path in sorted(ROOT.rglob("*.py")):
        for cls in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(cls, ast.ClassDef) or _is_settings(cls):
                continue
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name == "__init__":
                    if (n := _params(fn)) > MAX_PARAMS:
                        over.append(f"{path.relative_to(ROOT.parent)}:{fn.lineno} {cls.name}.__init__: {n}")
    assert not over, f"constructors over {MAX_PARAMS} parameters (take a settings Struct, passed whole): {over}"
