"""The shape of ad's source that ARCHITECTURE.md describes and import-linter
does not check: every module says what it holds (a docstring) and stays small
enough to read in one sitting (about 600 lines; a module that grows past the
bound is split along the concepts it holds)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ad

SOURCE = Path(ad.__file__).parent
MODULES = sorted(SOURCE.rglob("*.py"))
MAX_LINES = 650


def test_the_layers_are_the_documented_ones():
    packages = sorted(p.parent.name for p in SOURCE.glob("*/__init__.py"))
    assert packages == ["api", "higher", "runtime", "transform"]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SOURCE)))
def test_each_module_says_what_it_holds_and_stays_small(path):
    text = path.read_text(encoding="utf-8")
    assert ast.get_docstring(ast.parse(text)), f"{path.relative_to(SOURCE)} has no docstring"
    n = text.count("\n")
    assert n <= MAX_LINES, f"{path.relative_to(SOURCE)} has {n} lines: split it by concept"


def test_import_ad_registers_every_module_that_registers_rules():
    # In a fresh interpreter: a registration-only import lost in a refactor (as
    # ``ad.runtime.rules_callbacks``, sorted's and min's rules for keys that write,
    # once was) would leave those calls to the general path, and the suite would
    # not notice when another test imports the module first.
    import re
    import subprocess
    import sys

    registering = sorted(
        "ad." + ".".join(p.relative_to(SOURCE).with_suffix("").parts).removesuffix(".__init__")
        for p in MODULES
        if re.search(r"\b(rrule|frule)\.register\(|\bnon_differentiable\(", p.read_text())
    )
    assert "ad.runtime.rules_callbacks" in registering
    code = "import sys, ad; print(' '.join(sorted(m for m in sys.modules if m.startswith('ad.'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    missing = set(registering) - set(out.stdout.split())
    assert not missing, f"import ad does not import {sorted(missing)}: add them to ad/__init__.py"


def test_the_bindings_refuse_misuse(monkeypatch):
    from ad.runtime import calls
    from ad.transform import bindings

    with pytest.raises(TypeError, match=r"calls.bind: no dispatcher named \['rcal'\]"):
        calls.bind(rcal=print)
    monkeypatch.setattr(bindings, "_LIBRARY_ENTRY", [])
    with pytest.raises(RuntimeError, match="needs ad's runtime: import ad first"):
        bindings.library_entry(print, "reverse")
