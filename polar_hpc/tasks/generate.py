r"""``polar-hpc tasks generate``: a seeded family of small bug-fix tasks with a held-out split, sized for a CPU.

Each task is a repository of two files: ``<module>.py`` (two short functions, ~10 lines; one has a bug, see
:mod:`.family`) and ``test_<module>.py`` (one test per function). The instruction names the file, a call, what it
returns and what the test expects, and what the function should return (as a bug report states the intended
behaviour), but not the line. The reference solution: the oracle's look turn prints the function
(``solution_look``: ``grep -A5 'def NAME(' FILE``), then one ``perl -pi -e 's/\QOLD\E/NEW/' FILE`` replaces the
broken expression (the stripped line, unique in the file) by the right one (``solution_commands``; the file in
``solution_files``): both copied as written, nothing to escape (``\Q..\E`` quotes the pattern) and no line
number to pick.

The held-out split is written from name and value pools no train task draws from (function, helper, parameter
and module names; the numbers in the code and in the tests' calls), so a model that passes held-out tasks learnt
the job, not the answers. Same seed, same files, byte for byte.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from polar_hpc.errors import PolarError
from polar_hpc.tasks.family import (
    BUG_KINDS,
    DEFAULT_COUNTS,
    DEFAULT_SEED,
    SHAPES,
    SIBLINGS,
    SPLITS,
    Args,
    Bug,
    Names,
    Shape,
    Split,
    draw_args,
)
from polar_hpc.wire.session import SOLUTION_COMMANDS, SOLUTION_FILES, SOLUTION_LOOK

REPOS = "repos"
"""The repositories' folder inside the output folder (a recipe's workspace: ``{tasks_dir}/repos/{repo}``)."""


class Pools(msgspec.Struct, frozen=True):
    verbs: tuple[str, ...]
    nouns: tuple[str, ...]
    scalars: tuple[str, ...]
    seqs: tuple[str, ...]
    loops: tuple[str, ...]
    accs: tuple[str, ...]
    elems: tuple[str, ...]
    values: tuple[int, ...]


POOLS: dict[Split, Pools] = {
    "train": Pools(
        verbs=("scale", "total", "clip", "count", "pick", "shift", "limit", "bound", "fold", "merge", "adjust",
               "score", "rate", "grow", "trim", "mix", "sum", "find", "get", "make"),
        nouns=("price", "width", "height", "stock", "level", "speed", "budget", "weight", "volume", "points",
               "margin", "balance", "length", "distance", "count", "salary", "energy", "rating", "amount", "fee"),
        scalars=("amount", "size", "base", "step", "value", "rate", "extra", "offset", "delta", "factor", "low",
                 "high", "start", "stop", "limit", "num"),
        seqs=("items", "values", "prices", "scores", "numbers"),
        loops=("i", "k", "idx"), accs=("total", "acc", "result", "out"), elems=("v", "x", "item"),
        values=tuple(v for v in range(2, 62) if v % 3),
    ),
    "heldout": Pools(
        verbs=("tally", "gauge", "rank", "tune", "boost", "cap", "blend", "sift", "nudge", "warp", "probe", "stack"),
        nouns=("orbit", "pixel", "crate", "voltage", "tide", "lumen", "ferry", "quota", "ridge", "canyon",
               "meadow", "glacier"),
        scalars=("qty", "span", "depth", "bias", "gap", "mark", "lhs", "rhs", "floor_q", "ceil_q", "pivot",
                 "grain"),
        seqs=("entries", "samples", "readings", "cells"),
        loops=("j", "m", "pos"), accs=("tally_v", "sigma", "running"), elems=("e", "w", "cell"),
        values=tuple(v for v in range(3, 63, 3)),
    ),
}
"""Train and held-out pools share no name and no number (``tests/unit/tasks/test_generate.py`` checks the
written files too)."""


class GenerateError(PolarError):
    """An output folder or a count the generator cannot use."""


class Instance(msgspec.Struct, kw_only=True):
    """One task: its row (what the task file holds), its repository's files, and the fixed source."""

    row: dict[str, Any]
    files: dict[str, str]
    """The repository as written: the buggy module and its test file."""
    fixed: str
    """The module as the reference solution leaves it."""
    first_try: str = ""
    """A first fix that misses (``solution_first_try`` of a recovery demonstration): the body line nearest the
    broken one, replaced by itself, so the tests still fail and the repository is as it was."""


def _names(rng: random.Random, pools: Pools) -> Names:
    a, b, c = rng.sample(pools.scalars, 3)
    v1, v2 = rng.sample(pools.verbs, 2)
    noun = rng.choice(pools.nouns)
    return Names(func=f"{v1}_{noun}", helper=f"{v2}_{noun}", a=a, b=b, c=c, seq=rng.choice(pools.seqs),
                 loop=rng.choice(pools.loops), acc=rng.choice(pools.accs), elem=rng.choice(pools.elems))


_PLAIN = Names(func="f", helper="g", a="a", b="b", c="c", seq="s", loop="i", acc="t", elem="e")
SHAPE_KINDS = {name: {b.kind for b in make(_PLAIN, 2, 3).bugs} for name, make in SHAPES.items()}
"""The bug kinds each shape takes (a task's kind is chosen first, so kinds come round in turn)."""


def _exec(source: str) -> dict[str, Any]:
    space: dict[str, Any] = {}
    exec(compile(source, "<generated>", "exec"), space)  # our own generated code, never user input
    return space


def _call(fn: str, args: Args) -> str:
    return f"{fn}({', '.join(repr(a) for a in args)})"


LOOK_AFTER = 5
"""Lines ``grep -A`` prints after a ``def`` line: the longest shape's body (:mod:`.family`)."""
UNQUOTABLE = set("/\\$@'")
"""Characters the gold command cannot carry literally (the ``s///`` delimiter, perl's interpolation, the shell's
quotes); no shape writes them."""


def fix_command(old: str, new: str, path: str) -> str:
    """One in-place substitution of the text ``old`` (stripped; taken literally) by ``new`` (stripped) in ``path``."""
    bad = sorted(UNQUOTABLE & set(old + new))
    if bad:
        raise GenerateError(f"tasks generate: a line holds {''.join(bad)!r}, which the gold command cannot carry: "
                            f"{old.strip()!r} -> {new.strip()!r}")
    return f"perl -pi -e 's/\\Q{old.strip()}\\E/{new.strip()}/' {path}"


def look_command(func: str, path: str) -> str:
    """The look turn: ``func``'s definition and body in ``path``."""
    return f"grep -A{LOOK_AFTER} 'def {func}(' {path}"


def _instance(rng: random.Random, pools: Pools, split: Split, index: int) -> Instance | None:
    """One task, or None when this draw cannot make one (a bug that the drawn calls do not show, say)."""
    kind = BUG_KINDS[index % len(BUG_KINDS)]
    shapes = [s for s in SHAPES if kind in SHAPE_KINDS[s]]
    k, k2 = rng.sample(pools.values, 2)
    buggy_names, sib_names = _names(rng, pools), _names(rng, pools)
    if {buggy_names.func, buggy_names.helper} & {sib_names.func, sib_names.helper}:
        return None
    shape = SHAPES[rng.choice(shapes)](buggy_names, k, k2)
    sibling = SHAPES[rng.choice(SIBLINGS)](sib_names, *rng.sample(pools.values, 2))
    bug: Bug = rng.choice([b for b in shape.bugs if b.kind == kind])
    first, second = (shape, sibling) if rng.random() < 0.5 else (sibling, shape)
    offset = 0 if first is shape else len(first.lines) + 2
    fixed_lines = [*first.lines, "", "", *second.lines]
    buggy_lines = list(fixed_lines)
    buggy_lines[offset + bug.line] = bug.text
    if sum(bug.text.strip() in line for line in buggy_lines) != 1:
        return None
    fixed, buggy = "\n".join(fixed_lines) + "\n", "\n".join(buggy_lines) + "\n"
    good, bad = _exec(fixed), _exec(buggy)
    calls = _calls(rng, pools, shape, good, bad)
    if calls is None:
        return None
    nouns = dict.fromkeys(n.func.split("_", 1)[1] for n in (buggy_names, sib_names))
    module = "_".join(nouns)
    mod_file, test_file = f"{module}.py", f"test_{module}.py"
    sib_calls = _two(lambda: draw_args(sibling, rng, list(pools.values)))
    tests = [f"from {module} import {', '.join(sorted([shape.name, sibling.name]))}"]
    for s, args in ((shape, calls), (sibling, sib_calls)):
        tests += ["", "", f"def test_{s.name}():"]
        tests += [f"    assert {_call(s.name, a)} == {good[s.name](*a)!r}" for a in args]
    got, want = bad[shape.name](*calls[0]), good[shape.name](*calls[0])
    task_id = f"{split}-{index:04d}"
    row = {
        "task_id": task_id, "repo": task_id,
        "problem": (f"In {mod_file}, {_call(shape.name, calls[0])} returns {got!r} but the test expects {want!r}. "
                    f"{shape.spec} Fix {mod_file} so that {test_file} passes."),
        "FAIL_TO_PASS": [f"{test_file}::test_{shape.name}"], "PASS_TO_PASS": [f"{test_file}::test_{sibling.name}"],
        SOLUTION_COMMANDS: [fix_command(bug.text, shape.lines[bug.line], mod_file)],
        SOLUTION_FILES: [mod_file], SOLUTION_LOOK: [look_command(shape.name, mod_file)],
        "bug": kind, "split": split,
    }
    return Instance(row=row, files={mod_file: buggy, test_file: "\n".join(tests) + "\n"}, fixed=fixed,
                    first_try=_first_try(shape, bug.line, mod_file))


def _first_try(shape: Shape, broken: int, path: str) -> str:
    """A no-op substitution of the body line nearest ``broken`` (the one before it when both are as near)."""
    body = [i for i, line in enumerate(shape.lines)
            if i != broken and line.startswith(" ") and not UNQUOTABLE & set(line)]
    if not body:
        return ""
    line = shape.lines[min(body, key=lambda i: (abs(i - broken), i > broken))]
    return fix_command(line, line, path)


def _calls(rng: random.Random, pools: Pools, shape: Shape, good: dict[str, Any],
           bad: dict[str, Any]) -> list[Args] | None:
    """Two calls of the buggy function: the first shows the bug (the buggy code returns something else)."""
    for _ in range(50):
        first = draw_args(shape, rng, list(pools.values))
        if good[shape.name](*first) != bad[shape.name](*first):
            return [first, _two(lambda: draw_args(shape, rng, list(pools.values)), first)[1]]
    return None


def _two(draw: Callable[[], Args], first: Args | None = None) -> list[Args]:
    """Two different calls (``first``, if given, is the first)."""
    calls = [first if first is not None else draw()]
    while len(calls) < 2:
        nxt = draw()
        if nxt != calls[0]:
            calls.append(nxt)
    return calls


def instances(split: Split, count: int, seed: int = DEFAULT_SEED) -> list[Instance]:
    """``count`` tasks of ``split``, the same for the same seed."""
    rng = random.Random(f"polar-hpc-tasks:{seed}:{split}")
    out: list[Instance] = []
    while len(out) < count:
        inst = _instance(rng, POOLS[split], split, len(out))
        if inst is not None:
            out.append(inst)
    return out


class Generated(msgspec.Struct, kw_only=True):
    out: str
    counts: dict[str, int]
    seed: int

    def task_file(self, split: Split) -> Path:
        return Path(self.out) / f"{split}.jsonl"


def generate(out: Path, *, seed: int = DEFAULT_SEED, train: int = DEFAULT_COUNTS["train"],
             heldout: int = DEFAULT_COUNTS["heldout"]) -> Generated:
    """Write ``train.jsonl``, ``heldout.jsonl`` and ``repos/<task_id>/`` into ``out`` (a new or empty folder, or
    one this wrote before: its files are replaced)."""
    counts: dict[Split, int] = {"train": train, "heldout": heldout}
    for split, n in counts.items():
        if n < 1:
            raise GenerateError(f"tasks generate: --{split} must be >= 1, got {n}")
    ours = {f"{s}.jsonl" for s in SPLITS} | {REPOS}
    if out.exists() and (not out.is_dir() or ({p.name for p in out.iterdir()} - ours)):
        raise GenerateError(f"tasks generate --out {out}: expected a new or empty folder, or one `tasks generate` "
                            f"wrote (only {', '.join(sorted(ours))}); it holds other files")
    shutil.rmtree(out / REPOS, ignore_errors=True)
    for split, n in counts.items():
        rows = []
        for inst in instances(split, n, seed):
            repo = out / REPOS / inst.row["repo"]
            repo.mkdir(parents=True)
            for name, text in inst.files.items():
                (repo / name).write_text(text)
            rows.append(json.dumps(inst.row, sort_keys=True))
        (out / f"{split}.jsonl").write_text("\n".join(rows) + "\n")
    return Generated(out=str(out), counts={str(k): v for k, v in counts.items()}, seed=seed)
