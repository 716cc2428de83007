"""What the pipeline produces, shared by reverse and forward mode.

``Signature`` says where each parameter's (co)tangent sits in the generated
function's result; ``Compiled`` is a generated code object ready to bind to a
Python function's globals, defaults and closure cells.
"""

from __future__ import annotations

import ast
import types
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ad.transform._nodes import NO_VALUE
from ad.transform.activity import param_names

__all__ = ["Compiled", "Signature", "signature_of"]


@dataclass(frozen=True)
class Signature:
    """A function's parameters: positional, ``*args``, keyword-only, ``**kwargs``."""

    positional: tuple[str, ...]
    vararg: str | None
    kwonly: tuple[str, ...]
    kwarg: str | None
    all_names: tuple[str, ...]

    @property
    def simple(self) -> bool:
        """Positional parameters only: calls need no argument mapping."""
        return self.vararg is None and self.kwarg is None and not self.kwonly


def signature_of(fn: ast.FunctionDef) -> Signature:
    a = fn.args
    return Signature(
        positional=tuple(x.arg for x in a.posonlyargs + a.args),
        vararg=a.vararg.arg if a.vararg else None,
        kwonly=tuple(x.arg for x in a.kwonlyargs),
        kwarg=a.kwarg.arg if a.kwarg else None,
        all_names=tuple(param_names(fn)),
    )


#: The transforms whose ``last`` holds a generated function, latest last. That
#: function holds ``f``'s globals: a namespace made by ``exec`` holds ``f`` in
#: turn, so the weak reference alone would never see ``f`` go. Beyond this many,
#: the oldest ``last`` is dropped (a cycle through a namespace then lives no longer
#: than its last reference from outside).
_RECENT: deque = deque()
_RECENT_BOUND = 128


@dataclass
class Compiled:
    """A generated function for one code object, ready to bind to a function."""

    code: types.CodeType
    helper_cells: dict[str, types.CellType]
    spec: Signature
    source: str = ""
    #: ``(weak reference to f, generated function)`` of the last ``instantiate``:
    #: weak, so that neither ``f`` nor its closure outlives its last user
    last: tuple[Any, Any] = (None, None)
    #: the primal takes ``_ad_nv=True`` (its caller needs no value, see ``reverse``)
    elides: bool = False
    #: ``((name, function), ...)``: the helpers inlined, valid while each name in
    #: the function's globals is still that function (``inlining``)
    guards: tuple = ()
    #: the parameters unpacked by ``*`` (``captured_stars.starred_parameters``): a
    #: call where one holds a tuple takes a transform for its length (``lengths``)
    starred: tuple = ()
    #: ``spec.simple`` and the number of positional parameters, read on every call
    simple: bool = field(init=False)
    n_positional: int = field(init=False)

    def __post_init__(self) -> None:
        self.simple = self.spec.simple
        self.n_positional = len(self.spec.positional)

    def instantiate(self, f: types.FunctionType) -> types.FunctionType:
        """The generated function bound to ``f``'s globals, defaults and closure."""
        last_f, last_fn = self.last
        if last_f is not None and last_f() is f and last_fn.__defaults__ is f.__defaults__:
            return last_fn  # the usual case: the same function differentiated again
        own = dict(zip(f.__code__.co_freevars, f.__closure__ or ()))
        cells = tuple(own[n] if n in own else self.helper_cells[n] for n in self.code.co_freevars)
        fn = types.FunctionType(self.code, f.__globals__, f.__name__, f.__defaults__, cells)
        fn.__qualname__ = f.__qualname__  # a wrong call's TypeError names the user's function
        if self.elides:  # the generated keyword-only parameter's default
            fn.__kwdefaults__ = {NO_VALUE: False, **(f.__kwdefaults__ or {})}
        elif f.__kwdefaults__:
            fn.__kwdefaults__ = f.__kwdefaults__
        self.last = (weakref.ref(f, self._forget), fn)  # published whole: one assignment
        _RECENT.append(self)
        if len(_RECENT) > _RECENT_BOUND:
            try:
                old = _RECENT.popleft()
            except IndexError:  # pragma: no cover - another thread emptied it
                return fn
            if old is not self:
                old.last = (None, None)
        return fn

    def _forget(self, ref: weakref.ref) -> None:
        """``f`` is gone: drop the function bound to its closure with it."""
        if self.last[0] is ref:
            self.last = (None, None)
