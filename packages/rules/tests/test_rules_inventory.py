"""``rules.inventory()`` and the generated RULES.md."""

from __future__ import annotations

import builtins
import cmath
import math
import operator
import sys
from pathlib import Path

import numpy as np
import pytest

import rules
from rules._inventory import markdown
from rulescore import rrule, scalar_rule

RULES_MD = Path(__file__).resolve().parents[1] / "RULES.md"

# Functions this package promises rules for (both rrule and frule).
PROMISED = [
    *(getattr(operator, n) for n in ("add sub mul truediv floordiv mod pow neg pos abs".split())),
    *(getattr(operator, n) for n in ("iadd isub imul itruediv getitem".split())),
    *(getattr(operator, n) for n in ("lt le eq ne ge gt not_ truth is_ is_not contains".split())),
    np.add,
    np.subtract,
    np.multiply,
    np.divide,
    np.floor_divide,
    np.remainder,
    np.power,
    np.float_power,
    np.negative,
    np.positive,
    np.absolute,
    np.fabs,
    *(getattr(builtins, n) for n in "abs pow sum min max float complex divmod".split()),
    *(getattr(builtins, n) for n in "len range isinstance round int bool enumerate zip".split()),
    *(
        getattr(math, n)
        for n in (
            "sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh exp expm1 log log1p "
            "log2 log10 sqrt hypot atan2 erf erfc gamma lgamma fabs copysign pow fmod ldexp "
            "degrees radians floor ceil trunc fsum prod dist"
        ).split()
    ),
    *(
        getattr(cmath, n)
        for n in (
            "exp log log10 sqrt sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh "
            "phase polar rect isnan"
        ).split()
    ),
]


@pytest.mark.skipif(
    sys.version_info < (3, 11), reason="RULES.md lists math.cbrt and math.exp2 (Python 3.11+)"
)
def test_rules_md_is_current():
    expected = markdown()
    actual = RULES_MD.read_text(encoding="utf-8") if RULES_MD.exists() else ""
    assert actual == expected, (
        "packages/rules/RULES.md is out of date with the registered rules.\n"
        "To fix, regenerate it from the repository root:\n"
        "    python -m rules._inventory > packages/rules/RULES.md"
    )


@pytest.mark.parametrize("f", PROMISED, ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_promised_functions_are_listed_with_both_rules(f):
    (entry,) = [e for e in rules.inventory() if e.function is f]
    assert entry.has_rrule and entry.has_frule


def test_entries_are_sorted_and_unique():
    entries = rules.inventory()
    keys = [(e.module, e.name) for e in entries]
    assert keys == sorted(keys)
    assert len({id(e.function) for e in entries}) == len(entries)


def test_rules_for_other_functions_are_not_listed():
    def local_square(x):
        return x * x

    scalar_rule(local_square, lambda x, Ω: 2 * x)
    assert rrule(local_square, 3.0) is not None
    assert all(e.function is not local_square for e in rules.inventory())


def test_methods_and_aliases():
    by_function = {id(e.function): e for e in rules.inventory()}
    absolute = by_function[id(np.absolute)]
    assert (absolute.module, absolute.name, absolute.aliases) == ("numpy", "absolute", ("abs",))
    assert by_function[id(operator.add)].module == "operator"
