"""Lazily loaded rule modules: rules for a library that is costly to import.

``register_lazy_rules("scipy.stats", "rules._scipy_stats")`` says that the rules
for the functions of ``scipy.stats`` are registered by importing
``rules._scipy_stats``. Importing ``rules`` must not import ``scipy.stats`` (half
a second), yet a user who calls ``scipy.stats.norm.logpdf`` must find its rules.
The loader therefore runs when those functions come into existence: at once if
the module is already imported, otherwise right after its first import
finishes, from a finder on ``sys.meta_path`` that wraps that module's loader.

Why on import and not on a lookup that misses: a function cannot be called
before its module is imported, so loading then is never too late, and it costs
the rule tables nothing. ADs test whether a callable is in the table before
they look it up (the test is their hot path, see ``_dispatch``), so a miss may
never reach rulescore at all; and ``rrule.functions()`` sees the rules too.

The finder answers one dictionary lookup per import while loaders are pending
and removes itself once none are. A loader that fails inside someone else's
``import`` is reported with a ``RuntimeWarning`` (raising there would make that
import fail); called directly (``register_lazy_rules`` on an imported module,
``load_lazy_rules``) it raises.
"""

from __future__ import annotations

import importlib
import sys
import threading
import warnings
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from typing import Any

from .errors import RuleDefinitionError

__all__ = ["load_lazy_rules", "register_lazy_rules"]

#: module name -> loaders (module names or functions) to run when it is imported.
_PENDING: dict[str, list[Any]] = {}
_LOCK = threading.RLock()
#: Module names whose spec the finder is looking up right now (no recursion).
_BUSY: set[str] = set()


def register_lazy_rules(module: str, loader: str | Callable[[], Any]) -> None:
    """Register the rules for ``module``'s functions when ``module`` is imported.

    ``loader`` is the name of a module whose import registers the rules, or a
    function of no arguments that registers them. It runs once: now, if
    ``module`` is already imported, otherwise right after ``module`` is first
    imported (submodules count: importing ``pkg.sub`` imports ``pkg`` first).
    Until then nothing is imported and rule lookups are unaffected. If
    ``module`` is never imported (not installed), the loader never runs. A
    loader module may import ``module`` itself (it needs the functions); when
    it is imported first, the import of ``module`` inside it finds it half
    imported and lets it finish. Several loaders of one module run in the
    order registered and must not depend on one another: let one loader
    import the rest.

    >>> from rulescore import register_lazy_rules, non_differentiable, rrule
    >>> def calendar_rules():
    ...     import calendar
    ...     non_differentiable(calendar.isleap)
    >>> register_lazy_rules("calendar", calendar_rules)
    >>> import calendar              # the rules register as calendar is imported
    >>> rrule(calendar.isleap, 2024)[1](1.0)
    (NoTangent(), NoTangent())

    See also: :func:`load_lazy_rules`.
    """
    if not isinstance(module, str) or not all(p.isidentifier() for p in module.split(".")):
        raise RuleDefinitionError(
            f"register_lazy_rules: {module!r} is not a module name.\n"
            "To fix: pass the dotted name of the module whose functions the rules are "
            'for, e.g. "scipy.stats".'
        )
    if not (isinstance(loader, str) or callable(loader)):
        raise RuleDefinitionError(
            f"register_lazy_rules({module!r}): the loader {loader!r} is neither a module "
            "name nor a function.\nTo fix: pass the name of the module that registers the "
            'rules, e.g. "mylib_rules._stats", or a function of no arguments.'
        )
    with _LOCK:
        if module not in sys.modules:
            loaders = _PENDING.setdefault(module, [])
            if loader not in loaders:
                loaders.append(loader)
            if _FINDER not in sys.meta_path:
                sys.meta_path.insert(0, _FINDER)
            return
    _run(module, loader)


def load_lazy_rules(module: str | None = None) -> list[str]:
    """Import ``module`` (default: every module with pending loaders) to register its rules now.

    For tools that list rules (``rules.inventory()``). A module that cannot be
    imported (not installed) is skipped and stays pending. Returns the names
    of the modules whose loaders ran.

    >>> from rulescore import load_lazy_rules
    >>> load_lazy_rules("a_module_nobody_registered")
    []
    """
    with _LOCK:
        names = [module] if module is not None else list(_PENDING)
        names = [n for n in names if n in _PENDING]
    done = []
    for name in names:
        try:
            importlib.import_module(name)  # runs the loaders through the finder
        except ImportError:
            continue
        for loader in _take(name):  # imported before the finder could see it
            _run(name, loader)
        done.append(name)
    return done


def _take(module: str) -> list[Any]:
    """Remove and return ``module``'s pending loaders; drop the finder when none are left."""
    with _LOCK:
        loaders = _PENDING.pop(module, [])
        if not _PENDING and _FINDER in sys.meta_path:
            sys.meta_path.remove(_FINDER)
    return loaders


def _run(module: str, loader: Any) -> None:
    if isinstance(loader, str):
        importlib.import_module(loader)
    else:
        loader()


def _run_quietly(module: str) -> None:
    """Run ``module``'s loaders inside its import: report failures, never raise."""
    for loader in _take(module):
        try:
            _run(module, loader)
        except Exception as e:
            name = loader if isinstance(loader, str) else getattr(loader, "__qualname__", loader)
            warnings.warn(
                f"rulescore: the rules for {module} (registered by {name}) failed to load: "
                f"{type(e).__name__}: {e}. Functions of {module} have no rules.",
                RuntimeWarning,
                stacklevel=2,
            )


class _LazyRulesFinder:
    """A ``sys.meta_path`` finder for the modules with pending loaders.

    It finds the module's spec with the other finders and wraps the spec's
    loader so that the pending rule loaders run once the module has executed.
    """

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if fullname not in _PENDING or fullname in _BUSY:
            return None
        _BUSY.add(fullname)
        try:
            spec = None
            for finder in list(sys.meta_path):
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        finally:
            _BUSY.discard(fullname)
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return None  # the import machinery reports it, or loads it the old way
        spec.loader = _NotifyingLoader(spec.loader, fullname)
        return spec

    def invalidate_caches(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<rulescore lazy rules finder for {sorted(_PENDING)}>"


class _NotifyingLoader:
    """A module's own loader, followed by the pending rule loaders of that module."""

    def __init__(self, loader: Any, name: str) -> None:
        self.loader = loader
        self.name = name

    def create_module(self, spec: ModuleSpec) -> Any:
        create = getattr(self.loader, "create_module", None)
        return None if create is None else create(spec)

    def exec_module(self, module: Any) -> None:
        # The module (and its spec) keep the real loader: resources, source, reload.
        module.__loader__ = self.loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        _run_quietly(self.name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


_FINDER = _LazyRulesFinder()
