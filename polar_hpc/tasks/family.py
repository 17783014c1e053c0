"""The function shapes of the generated task family (``polar-hpc tasks generate``) and the bugs each one takes.

A shape is a short Python function written from names and constants it is given; each of its bugs replaces one
whole line by a wrong one (an operator, a constant, an off-by-one bound, swapped arguments or a wrong name), so
the fix is one ``sed`` substitution of that line. Names and values come from the caller (:mod:`.generate`), which
keeps the train and held-out pools apart.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Literal

import msgspec

Split = Literal["train", "heldout"]
SPLITS: tuple[Split, ...] = ("train", "heldout")
DEFAULT_COUNTS: dict[Split, int] = {"train": 300, "heldout": 100}
DEFAULT_SEED = 0
"""The generator's defaults (here, light to import, for the command line's help)."""

BugKind = Literal["operator", "constant", "off_by_one", "swapped_args", "wrong_name"]
BUG_KINDS: tuple[BugKind, ...] = ("operator", "constant", "off_by_one", "swapped_args", "wrong_name")

Args = tuple[int | list[int], ...]


class Bug(msgspec.Struct, frozen=True):
    line: int
    """Index of the broken line in the shape's lines."""
    text: str
    """The broken line, indented as the line it replaces."""
    kind: BugKind


class Shape(msgspec.Struct, kw_only=True):
    """One function (or a helper and its caller): its lines as written correctly, and the bugs it takes."""

    name: str
    """The function the tests call (and the instruction names)."""
    lines: list[str]
    bugs: list[Bug]
    arity: int
    lists: tuple[int, ...] = ()
    """Which arguments are lists of numbers (the others are numbers)."""
    exported: tuple[str, ...] = ()
    """Every function the tests import (default: ``name``)."""
    spec: str = ""
    """What the function should return, in words and the shape's own names and constants (the instruction's
    second sentence, as a bug report states the intended behaviour)."""


class Names(msgspec.Struct, kw_only=True):
    """The identifiers one shape is written with (drawn from one split's pools)."""

    func: str
    helper: str
    a: str
    b: str
    c: str
    seq: str
    loop: str
    acc: str
    elem: str


def _linear(n: Names, k: int, k2: int) -> Shape:
    lines = [f"def {n.func}({n.a}, {n.b}):",
             f"    {n.acc} = {n.a} * {k}",
             f"    return {n.acc} + {n.b}"]
    bugs = [Bug(1, f"    {n.acc} = {n.a} + {k}", "operator"),
            Bug(2, f"    return {n.acc} - {n.b}", "operator"),
            Bug(1, f"    {n.acc} = {n.a} * {k2}", "constant"),
            Bug(2, f"    return {n.acc} + {n.a}", "wrong_name")]
    return Shape(name=n.func, lines=lines, bugs=bugs, arity=2,
                 spec=f"{n.func}({n.a}, {n.b}) should return {n.a} * {k} + {n.b}.")


def _accumulate(n: Names, k: int, k2: int) -> Shape:
    lines = [f"def {n.func}({n.a}):",
             f"    {n.acc} = 0",
             f"    for {n.loop} in range(1, {n.a} + 1):",
             f"        {n.acc} += {n.loop} * {k}",
             f"    return {n.acc}"]
    bugs = [Bug(2, f"    for {n.loop} in range(1, {n.a}):", "off_by_one"),
            Bug(3, f"        {n.acc} -= {n.loop} * {k}", "operator"),
            Bug(3, f"        {n.acc} += {n.loop} * {k2}", "constant"),
            Bug(3, f"        {n.acc} += {n.a} * {k}", "wrong_name")]
    return Shape(name=n.func, lines=lines, bugs=bugs, arity=1,
                 spec=f"{n.func}({n.a}) should return the sum of {n.loop} * {k} for {n.loop} from 1 to {n.a}.")


def _clamp(n: Names, k: int, k2: int) -> Shape:
    lines = [f"def {n.func}({n.a}, {n.b}, {n.c}):",
             f"    if {n.a} < {n.b}:",
             f"        return {n.b}",
             f"    if {n.a} > {n.c}:",
             f"        return {n.c}",
             f"    return {n.a}"]
    bugs = [Bug(1, f"    if {n.a} > {n.b}:", "operator"),
            Bug(4, f"        return {n.b}", "wrong_name"),
            Bug(2, f"        return {n.c}", "wrong_name")]
    return Shape(name=n.func, lines=lines, bugs=bugs, arity=3,
                 spec=(f"{n.func}({n.a}, {n.b}, {n.c}) should return {n.b} if {n.a} < {n.b}, {n.c} if {n.a} > {n.c}, "
                       f"else {n.a}."))


def _helper(n: Names, k: int, k2: int) -> Shape:
    lines = [f"def {n.helper}({n.a}, {n.b}):",
             f"    return {n.a} * {k} - {n.b}",
             "",
             "",
             f"def {n.func}({n.a}, {n.b}):",
             f"    return {n.helper}({n.a}, {n.b}) + {k2}"]
    bugs = [Bug(5, f"    return {n.helper}({n.b}, {n.a}) + {k2}", "swapped_args"),
            Bug(5, f"    return {n.helper}({n.a}, {n.b}) - {k2}", "operator"),
            Bug(5, f"    return {n.helper}({n.a}, {n.a}) + {k2}", "wrong_name")]
    return Shape(name=n.func, lines=lines, bugs=bugs, arity=2, exported=(n.func, n.helper),
                 spec=(f"{n.func}({n.a}, {n.b}) should return {n.helper}({n.a}, {n.b}) + {k2}, where "
                       f"{n.helper}({n.a}, {n.b}) returns {n.a} * {k} - {n.b}."))


def _count(n: Names, k: int, k2: int) -> Shape:
    lines = [f"def {n.func}({n.seq}, {n.a}):",
             f"    {n.acc} = 0",
             f"    for {n.elem} in {n.seq}:",
             f"        if {n.elem} >= {n.a}:",
             f"            {n.acc} += 1",
             f"    return {n.acc}"]
    bugs = [Bug(3, f"        if {n.elem} > {n.a}:", "off_by_one"),
            Bug(3, f"        if {n.elem} <= {n.a}:", "operator"),
            Bug(3, f"        if {n.a} >= {n.elem}:", "swapped_args"),
            Bug(1, f"    {n.acc} = 1", "off_by_one")]
    return Shape(name=n.func, lines=lines, bugs=bugs, arity=2, lists=(0,),
                 spec=(f"{n.func}({n.seq}, {n.a}) should return how many {n.elem} in {n.seq} are >= {n.a}, "
                       "counting from 0."))


def _largest(n: Names, k: int, k2: int) -> Shape:
    lines = [f"def {n.func}({n.seq}):",
             f"    {n.acc} = {n.seq}[0]",
             f"    for {n.elem} in {n.seq}:",
             f"        if {n.elem} > {n.acc}:",
             f"            {n.acc} = {n.elem}",
             f"    return {n.acc}"]
    bugs = [Bug(3, f"        if {n.elem} < {n.acc}:", "operator"),
            Bug(5, f"    return {n.elem}", "wrong_name"),
            Bug(1, f"    {n.acc} = {n.seq}[1]", "off_by_one")]
    return Shape(name=n.func, lines=lines, bugs=bugs, arity=1, lists=(0,),
                 spec=f"{n.func}({n.seq}) should return the largest {n.elem} in {n.seq}, starting from {n.seq}[0].")


def _threshold(n: Names, k: int, k2: int) -> Shape:
    lines = [f"def {n.func}({n.a}, {n.b}):",
             f"    if {n.a} >= {n.b}:",
             f"        return {n.a} - {n.b}",
             f"    return {k}"]
    bugs = [Bug(1, f"    if {n.a} > {n.b}:", "off_by_one"),
            Bug(2, f"        return {n.b} - {n.a}", "swapped_args"),
            Bug(3, f"    return {k2}", "constant"),
            Bug(2, f"        return {n.a} + {n.b}", "operator")]
    return Shape(name=n.func, lines=lines, bugs=bugs, arity=2,
                 spec=f"{n.func}({n.a}, {n.b}) should return {n.a} - {n.b} if {n.a} >= {n.b}, else {k}.")


SHAPES: dict[str, Callable[[Names, int, int], Shape]] = {
    "linear": _linear, "accumulate": _accumulate, "clamp": _clamp, "helper": _helper, "count": _count,
    "largest": _largest, "threshold": _threshold,
}
"""Every shape by name. A task's buggy function is drawn from all of them; its sibling (the function whose test
must keep passing) from :data:`SIBLINGS`."""
SIBLINGS = ("linear", "accumulate", "clamp", "largest", "threshold")


def draw_args(shape: Shape, rng: random.Random, values: list[int]) -> Args:
    """Arguments for one call, every number from ``values`` (a split's pool): lists of 3-5 of them; a clamp gets
    ordered bounds; a count's bound is one of its list's numbers."""
    if shape.arity == 3:  # clamp(value, low, high): the value below, inside or above [low, high]
        low, mid, high = sorted(rng.sample(values, 3))
        return rng.choice([(low, mid, high), (mid, low, high), (high, low, mid)])
    out: list[int | list[int]] = [rng.choice(values) for _ in range(shape.arity)]
    for i in shape.lists:
        seq = [rng.choice(values) for _ in range(rng.randint(3, 5))]
        out[i] = seq
        if shape.arity == 2:
            out[1 - i] = rng.choice(seq)
    return tuple(out)
