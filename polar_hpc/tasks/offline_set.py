"""The offline real-repository SWE task set: which projects, which instances.

Each project is a pinned sdist from PyPI (sha256 checked). Each instance is a real piece of the project's code
taken out (``revert``: exact text replacements on its source, the gold patch puts the code back) together with
the project's own tests of it (``tests``: ``test_fn`` or ``Class.test_fn`` removed from the base commit, the test
patch adds them back), as SWE-bench instances are built from a fix and its tests.
"""

from __future__ import annotations

import msgspec


class Project(msgspec.Struct, frozen=True):
    name: str
    version: str
    sha256: str
    repo: str
    """``owner/name`` as SWE-bench spells repositories."""


class Instance(msgspec.Struct, frozen=True):
    instance_id: str
    project: str
    problem_statement: str
    source: str
    revert: list[tuple[str, str]]
    """(upstream text, what the base commit has instead), each found exactly once in ``source``."""
    test_file: str
    tests: list[str]


PROJECTS = [
    Project("inflection", "0.5.1", "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417",
            "jpvanhal/inflection"),
    Project("six", "1.16.0", "1e61c37477a1626458e36f7b1d82aa5c9b094fa4802892072e49de9c60c4c926", "benjaminp/six"),
    Project("toolz", "0.12.1", "ecca342664893f177a13dac0e6b41cbd8ac25a358e5f215316d43e2100224f4d",
            "pytoolz/toolz"),
]

INSTANCES = [
    Instance(
        "jpvanhal__inflection-1", "inflection",
        "`ordinal(11)` returns 'st' instead of 'th' (and 12 → 'nd', 13 → 'rd', also for 111, 112, 113 ...). "
        "English ordinals of numbers ending in 11, 12 or 13 always take 'th'.",
        "inflection/__init__.py",
        [('    if number % 100 in (11, 12, 13):\n        return "th"\n    else:\n        return {',
          "    return {")],
        "test_inflection.py", ["test_ordinal", "test_ordinalize"]),
    Instance(
        "jpvanhal__inflection-2", "inflection",
        "`parameterize('Donald E. Knuth', '_')` gives 'donald_e__knuth' and a trailing separator is kept: runs of "
        "the separator should collapse into one and leading/trailing separators should be removed.",
        "inflection/__init__.py",
        [("    if separator:\n        re_sep = re.escape(separator)\n"
          "        # No more than one of the separator in a row.\n"
          "        string = re.sub(r'%s{2,}' % re_sep, separator, string)\n"
          "        # Remove leading/trailing separator.\n"
          "        string = re.sub(r\"(?i)^{sep}|{sep}$\".format(sep=re_sep), '', string)\n\n", "\n")],
        "test_inflection.py",
        ["test_parameterize", "test_parameterize_with_custom_separator",
         "test_parameterize_with_multi_character_separator"]),
    Instance(
        "benjaminp__six-1", "six",
        "`class C(six.with_metaclass(Meta, typing.Generic[T]))` fails on Python >= 3.7: with_metaclass must resolve "
        "PEP 560 bases (`__mro_entries__`) as class statements do, and keep the originals in `__orig_bases__`.",
        "six.py",
        [("            if sys.version_info[:2] >= (3, 7):\n"
          "                # This version introduced PEP 560 that requires a bit\n"
          "                # of extra care (we mimic what is done by __build_class__).\n"
          "                resolved_bases = types.resolve_bases(bases)\n"
          "                if resolved_bases is not bases:\n"
          "                    d['__orig_bases__'] = bases\n"
          "            else:\n                resolved_bases = bases\n", "            resolved_bases = bases\n")],
        "test_six.py", ["test_with_metaclass_typing", "test_with_metaclass_pep_560"]),
    Instance(
        "benjaminp__six-2", "six",
        "`@six.add_metaclass` fails on a class that defines `__slots__` (TypeError: '...' in __slots__ conflicts "
        "with class variable): the slot descriptors must not be copied into the new class.",
        "six.py",
        [("        slots = orig_vars.get('__slots__')\n        if slots is not None:\n"
          "            if isinstance(slots, str):\n                slots = [slots]\n"
          "            for slots_var in slots:\n                orig_vars.pop(slots_var)\n", "")],
        "test_six.py", ["test_add_metaclass"]),
    Instance(
        "pytoolz__toolz-1", "toolz",
        "`partition_all(4, iter(seq))` raises TypeError (object of type 'list_iterator' has no len()) when the last "
        "partition is short: it must work on iterators too.",
        "toolz/itertoolz.py",
        [("        try:\n            # If seq defines __len__, then\n"
          "            # we can quickly calculate where no_pad starts\n"
          "            yield prev[:len(seq) % n]\n        except TypeError:\n            # Get first index of no_pad "
          "without using .index()\n            # https://github.com/pytoolz/toolz/issues/387\n"
          "            # Binary search from CPython's bisect module,\n            # modified for identity testing.\n"
          "            lo, hi = 0, n\n            while lo < hi:\n                mid = (lo + hi) // 2\n"
          "                if prev[mid] is no_pad:\n                    hi = mid\n                else:\n"
          "                    lo = mid + 1\n            yield prev[:lo]\n", "        yield prev[:len(seq) % n]\n")],
        "toolz/tests/test_itertoolz.py", ["test_partition_all"]),
    Instance(
        "pytoolz__toolz-2", "toolz",
        "`update_in({}, ['z'], inc, 0)` raises KeyError: a missing key should be created with `func(default)`.",
        "toolz/dicttoolz.py",
        [("    if k in d:\n        inner[k] = func(d[k])\n    else:\n        inner[k] = func(default)\n    return rv",
          "    inner[k] = func(d[k])\n    return rv")],
        "toolz/tests/test_dicttoolz.py", ["TestDict.test_update_in"]),
]
