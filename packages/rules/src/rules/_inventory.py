"""``inventory()``: every library function with a registered rule, and RULES.md.

The inventory lists the functions of the libraries ``rules`` covers
(``builtins``, ``operator``, ``math``, ``cmath``, ``numpy``, ``numpy.linalg``,
``numpy.fft``, ``numpy.random``, the methods of ``numpy.ndarray`` and of numpy
scalars, ``numpy.generic``, ``numpy.polynomial.polynomial``, ``rules.functional`` (the
functional forms of numpy's in-place functions), and, where scipy is
installed, ``scipy.special``, ``scipy.linalg``, ``scipy.stats``, ``scipy.signal`` and
``scipy.integrate``) that have an ``rrule`` or ``frule``,
whoever registered them. Rules for other functions (a user's own, a test's, rulescore's
``ignore_derivatives``) are not listed, so the table does not depend on what
else happens to be imported.

``python -m rules._inventory > packages/rules/RULES.md`` regenerates the
table; a test checks that the committed file is current.
"""

from __future__ import annotations

import builtins
import cmath
import functools
import importlib
import math
import operator
import types
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rulescore import frule, load_lazy_rules, rrule

__all__ = ["InventoryEntry", "inventory", "markdown"]

# The module (as shown) -> the namespace its functions are found in, for aliases.
_NAMESPACES: dict[str, Any] = {
    "builtins": builtins,
    "operator": operator,
    "math": math,
    "cmath": cmath,
    "numpy": np,
    "numpy.linalg": np.linalg,
    "numpy.fft": np.fft,
    "numpy.random": np.random,
    "numpy.ndarray": np.ndarray,
    "numpy.generic": np.generic,
    "numpy.ufunc": np.ufunc,
}
_SCIPY = (
    "scipy.special",
    "scipy.linalg",
    "scipy.stats",
    "scipy.signal",
    "scipy.integrate",
    "numpy.polynomial.polynomial",  # lazily imported by numpy, so loaded like scipy's
)


@functools.cache
def _namespaces() -> dict[str, Any]:
    """``_NAMESPACES`` and scipy's, where scipy is installed (imported on first use)."""
    out = dict(_NAMESPACES)
    out["rules.functional"] = importlib.import_module("rules.functional")
    for module in _SCIPY:
        try:  # scipy is optional (the rules[scipy] extra)
            out[module] = importlib.import_module(module)
        except ImportError:  # pragma: no cover - environments without scipy
            pass
    return out


_SCIPY_PARTS = ("special", "linalg", "stats", "signal", "integrate")


@dataclass(frozen=True)
class InventoryEntry:
    """One function with a rule: where it lives, its other names, which rules it has."""

    function: Any
    module: str
    name: str
    has_rrule: bool
    has_frule: bool
    aliases: tuple[str, ...] = field(default=())


def _module_and_name(f: Any) -> tuple[str, str]:
    """Where a user finds ``f``: ``("numpy", "add")``, ``("numpy.ndarray", "sum")``,
    ``("scipy.stats", "norm.logpdf")`` (a method of a module-level object)."""
    name = getattr(f, "__name__", None) or repr(f)
    if isinstance(f, types.MethodType) and not isinstance(f.__self__, type):
        mod, _ = _module_and_name(f.__func__)
        owner = _names(mod).get(id(f.__self__), ()) if mod in _namespaces() else ()
        if owner:
            return mod, f"{owner[0]}.{name}"
    objclass = getattr(f, "__objclass__", None)
    if objclass is not None:  # an unbound method or property such as numpy.ndarray.sum
        mod = getattr(objclass, "__module__", None) or ""
        return f"{mod}.{objclass.__name__}", name
    mod = getattr(f, "__module__", None) or _namespace_holding(f)
    if mod == "_operator":
        mod = "operator"
    elif mod == "numpy.polynomial.polynomial":
        pass
    elif mod.startswith("numpy.linalg"):
        mod = "numpy.linalg"
    elif mod.startswith("numpy.fft"):
        mod = "numpy.fft"
    elif mod.startswith("numpy.random"):
        mod = "numpy.random"
    elif mod.startswith("numpy"):
        mod = "numpy"
    elif mod.startswith("scipy.") and mod.split(".")[1] in _SCIPY_PARTS:
        mod = ".".join(mod.split(".")[:2])
    return mod, name


def _namespace_holding(f: Any) -> str:
    """The first covered namespace binding ``f``, for objects without ``__module__``.

    scipy.special's ufuncs have none.
    """
    for module in _namespaces():
        if id(f) in _names(module):
            return module
    return ""


@functools.cache
def _names(module: str) -> dict[int, list[str]]:
    """The public names in a namespace, by the id of the object they are bound to."""
    ns = _namespaces()[module]
    out: dict[int, list[str]] = {}
    with warnings.catch_warnings():  # numpy warns on reading some deprecated names
        warnings.simplefilter("ignore")
        for n in dir(ns):
            if not n.startswith("_"):
                out.setdefault(id(getattr(ns, n, None)), []).append(n)
    return out


def _has_generic_rule(table: Any, f: Any) -> bool:
    """A rule any AD can use: no config, or one of rulescore's own traits.

    Rules an AD registers for its own config (``ad`` adds some for iteration
    builtins) belong to that AD, not to this inventory.
    """
    return any(
        not r.opt_out and (r.config is None or r.config.__module__ == "rulescore._config")
        for r in table.table.rules_for(f)
    )


def inventory() -> list[InventoryEntry]:
    """Every covered library function with an ``rrule`` or ``frule``, by module and name.

    >>> import math, rules
    >>> [(e.module, e.name, e.has_rrule, e.has_frule)
    ...  for e in rules.inventory() if e.function is math.sin]
    [('math', 'sin', True, True)]
    >>> [e.aliases for e in rules.inventory() if e.name == "absolute"]
    [('abs',)]

    See also: ``markdown()``, which renders it as RULES.md.
    """
    for module in _SCIPY:  # rules registered with register_lazy_rules (scipy.stats)
        load_lazy_rules(module)
    fs: dict[int, Any] = {}
    for f in rrule.functions() + frule.functions():
        if _has_generic_rule(rrule, f) or _has_generic_rule(frule, f):
            fs[id(f)] = f
    out = []
    for f in fs.values():
        mod, name = _module_and_name(f)
        if mod not in _namespaces():
            continue
        if isinstance(f, types.FunctionType) and id(f) not in _names(mod):
            continue  # another library's function that names numpy its module (dask's isin)
        aliases = tuple(sorted(n for n in _names(mod).get(id(f), ()) if n != name))
        out.append(
            InventoryEntry(
                f, mod, name, _has_generic_rule(rrule, f), _has_generic_rule(frule, f), aliases
            )
        )
    out.sort(key=lambda e: (e.module, e.name))
    return out


def _yes(b: bool) -> str:
    return "yes" if b else "no"


def markdown() -> str:
    """The RULES.md text: functions by module with their rrule/frule coverage."""
    entries = inventory()
    lines = [
        "# Rules",
        "",
        "Functions with derivative rules in `rules`, by module.",
        "Generated by `python -m rules._inventory > packages/rules/RULES.md`;",
        "do not edit by hand.",
        "",
        f"{len(entries)} functions.",
    ]
    current = None
    for e in entries:
        if e.module != current:
            current = e.module
            count = sum(1 for x in entries if x.module == current)
            lines += [
                "",
                f"## `{current}` ({count})",
                "",
                "| function | rrule | frule |",
                "|---|---|---|",
            ]
        also = f" (also {', '.join(f'`{a}`' for a in e.aliases)})" if e.aliases else ""
        lines.append(f"| `{e.name}`{also} | {_yes(e.has_rrule)} | {_yes(e.has_frule)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    # ``python -m rules._inventory`` imports the package ``rules`` before running this
    # module, so every rule is registered by now: no ``import rules`` here (the
    # package imports this module, and an import back would be a cycle).
    print(markdown(), end="")
