"""register_lazy_rules / load_lazy_rules: rules that register when their module is imported.

Each test writes a small package and a loader module to a temporary folder,
under names of its own, so the import system sees them fresh. No numpy.
"""

import importlib
import itertools
import sys
import textwrap

import pytest

from rulescore import (
    RuleDefinitionError,
    _lazy,
    frule,
    load_lazy_rules,
    register_lazy_rules,
    rrule,
)

_counter = itertools.count()


@pytest.fixture
def lib(tmp_path, monkeypatch):
    """``(target, loader)`` module names: a package with a function, a class instance
    (its bound methods) and a submodule; a loader module registering their rules and
    counting its runs in ``target._loads``."""
    n = next(_counter)
    target, loader = f"lazytarget{n}", f"lazyloader{n}"
    pkg = tmp_path / target
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        textwrap.dedent(
            """
            _loads = []

            def double(x):
                return 2 * x

            class Dist:
                def logpdf(self, x):
                    return -x * x

            dist = Dist()
            """
        )
    )
    (pkg / "sub.py").write_text("def triple(x):\n    return 3 * x\n")
    (tmp_path / f"{loader}.py").write_text(
        textwrap.dedent(
            f"""
            import {target}
            from rulescore import scalar_rule

            {target}._loads.append(1)
            scalar_rule({target}.double, lambda x, y: 2.0)
            scalar_rule({target}.dist.logpdf, lambda x, y: -2 * x)
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield target, loader
    for name in (target, f"{target}.sub", loader):
        sys.modules.pop(name, None)
    _lazy._take(target)


def test_registering_imports_nothing(lib):
    target, loader = lib
    register_lazy_rules(target, loader)
    assert target not in sys.modules
    assert loader not in sys.modules
    assert _lazy._FINDER in sys.meta_path


def test_import_of_the_module_registers_its_rules(lib):
    target, loader = lib
    register_lazy_rules(target, loader)
    mod = importlib.import_module(target)
    assert mod._loads == [1]
    assert loader in sys.modules
    assert target not in _lazy._PENDING
    # An AD's cheap membership test, before any lookup, sees the rule.
    assert mod.double in rrule.table._rules
    y, pb = rrule(mod.double, 3.0)
    assert (y, pb(1.0)[1]) == (6.0, 2.0)
    assert frule((None, 1.0), mod.double, 3.0) == (6.0, 2.0)
    importlib.import_module(target)  # a second import runs nothing again
    assert mod._loads == [1]


def test_importing_the_loader_first_registers_once(lib):
    """The loader imports its module, whose import runs the (half-imported) loader."""
    target, loader = lib
    register_lazy_rules(target, loader)
    importlib.import_module(loader)
    mod = sys.modules[target]
    assert mod._loads == [1]
    assert rrule(mod.double, 1.0) is not None


def test_bound_methods_are_found_from_a_fresh_attribute_access(lib):
    target, loader = lib
    register_lazy_rules(target, loader)
    mod = importlib.import_module(target)
    m1, m2 = mod.dist.logpdf, mod.dist.logpdf
    assert m1 is not m2
    assert m2 in rrule.table._rules
    y, pb = rrule(mod.dist.logpdf, 3.0)
    assert (y, pb(1.0)[1]) == (-9.0, -6.0)
    assert rrule(mod.Dist().logpdf, 3.0) is None  # another instance: no rule


def test_importing_a_submodule_loads_the_package_rules(lib):
    target, loader = lib
    register_lazy_rules(target, loader)
    sub = importlib.import_module(f"{target}.sub")
    assert sub.triple(1) == 3
    assert sys.modules[target]._loads == [1]


def test_an_imported_module_loads_at_once(lib):
    target, loader = lib
    mod = importlib.import_module(target)
    register_lazy_rules(target, loader)
    assert mod._loads == [1]
    assert target not in _lazy._PENDING
    assert rrule(mod.double, 1.0) is not None


def test_loader_function_runs_once(lib):
    target, _ = lib
    calls = []
    register_lazy_rules(target, lambda: calls.append(sys.modules[target].double(1)))
    assert calls == []
    importlib.import_module(target)
    importlib.import_module(target)
    assert calls == [2]


def test_the_real_loader_stays_on_the_module(lib):
    target, loader = lib
    register_lazy_rules(target, loader)
    mod = importlib.import_module(target)
    assert type(mod.__loader__).__name__ != "_NotifyingLoader"
    assert mod.__spec__.loader is mod.__loader__
    assert importlib.reload(mod).double(2) == 4


def test_missing_module_fails_as_usual_and_stays_pending(lib):
    _, loader = lib
    name = f"lazy_not_installed{next(_counter)}"
    register_lazy_rules(name, loader)
    try:
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(name)
        assert name in _lazy._PENDING
        assert load_lazy_rules(name) == []
        assert loader not in sys.modules
    finally:
        _lazy._take(name)


def test_load_lazy_rules_imports_the_module(lib):
    target, loader = lib
    register_lazy_rules(target, loader)
    assert load_lazy_rules(target) == [target]
    assert sys.modules[target]._loads == [1]
    assert load_lazy_rules(target) == []


def test_a_failing_loader_warns_and_the_import_succeeds(lib):
    target, _ = lib

    def broken():
        raise KeyError("oops")

    register_lazy_rules(target, broken)
    with pytest.warns(RuntimeWarning, match=f"rules for {target} .*broken.*KeyError"):
        mod = importlib.import_module(target)
    assert mod.double(1) == 2


def test_a_failing_loader_raises_when_called_directly(lib):
    target, _ = lib
    importlib.import_module(target)
    with pytest.raises(ModuleNotFoundError):
        register_lazy_rules(target, "lazy_no_such_loader")


def test_lookup_misses_import_nothing(lib):
    target, loader = lib
    register_lazy_rules(target, loader)

    def unrelated(x):
        return x

    assert rrule(unrelated, 1.0) is None
    assert target not in sys.modules


@pytest.mark.parametrize(
    "module, loader",
    [("", "x"), ("not a module", "x"), (3, "x"), ("fine.name", 3), ("fine.name", None)],
)
def test_bad_arguments_are_definition_errors(module, loader):
    with pytest.raises(RuleDefinitionError, match="register_lazy_rules"):
        register_lazy_rules(module, loader)
