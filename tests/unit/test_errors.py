"""One error base: every exception class defined in ``polar_hpc`` is a ``PolarError`` (which carries the exit code
of ``polar-hpc``), or internal control flow named in ``errors.INTERNAL`` (or a subclass of one)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import cache

import polar_hpc
from polar_hpc.errors import INTERNAL, PolarError


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


@cache
def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(polar_hpc.__path__, "polar_hpc."):
        if info.name.endswith("__main__"):
            continue  # runs the command line when imported
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                found[_name(obj)] = obj
    return found


def test_every_exception_class_is_a_polar_error_or_named_internal() -> None:
    classes = _exception_classes()
    assert len(classes) > 40, "the walk found too few exception classes to mean anything"
    stray = sorted(name for name, cls in classes.items()
                   if not issubclass(cls, PolarError) and not any(_name(b) in INTERNAL for b in cls.__mro__))
    assert not stray, f"not under PolarError nor in errors.INTERNAL: {', '.join(stray)}"
    for name in INTERNAL:
        assert name in classes, f"errors.INTERNAL names {name}, which polar_hpc does not define"
        assert not issubclass(classes[name], PolarError), f"{name} is a PolarError and in errors.INTERNAL"


def test_exit_codes_are_one_or_two() -> None:
    codes = {name: cls.exit_code for name, cls in _exception_classes().items() if issubclass(cls, PolarError)}
    assert set(codes.values()) <= {1, 2}, codes
    assert codes["polar_hpc.store.reader.MissingShards"] == 2 and codes["polar_hpc.store.reader.EmptySelection"] == 1
