"""Who else can see an object that differentiated code is about to write in place.

Python's in-place updates (``x += y`` on an array, ``v[i] = a``, ``d[k] = v``,
``lst.append(v)``, ``o.a = v``, ``out=x``) change an *object*, and every name,
container, view or caller holding that object sees the change. The AD follows
*variables*: it differentiates ``x += y`` as ``x = x + y`` and tracks a
container's tangent under the name it is written through. The two agree exactly
when nothing else can observe the object, which CPython's reference counts and
``ndarray.base`` tell: ``own`` runs before every such write in generated code
and

* returns the object when only the written variable holds it (the common
  case: one ``getrefcount`` and one ``.base`` test);
* otherwise accounts for every other reference. References held by the AD
  itself (its tape of pullbacks and its temporaries, in the generated frames
  on the stack) are harmless to a differentiated update, which builds a new
  array, but an undifferentiated in-place write would corrupt the values a
  pullback saved: there ``own`` returns a copy (copy-on-write), which the
  write then changes while the tape keeps the original;
* raises ``MutationError``, naming the variable, the other holders it found
  and a fix, when a holder the user can observe (another variable, a list, a
  dict, an object, a view, the caller) would see a change the AD cannot follow.

An undifferentiated write into an object nothing on the tape holds runs as
plain Python, in place, whoever else holds it.

>>> import numpy as np
>>> def f(x):                         # a view of y would see the update
...     y = x * 1.0
...     v = y[:2]
...     v *= 10.0
...     return np.sum(y)
>>> import ad
>>> ad.gradient(f, np.ones(3))
Traceback (most recent call last):
...
ad.errors.MutationError: ...: 'v' is updated in place, but it is a view of another array ...
"""

from __future__ import annotations

import copy
import dis
import inspect
import os
import re
import sys
import types
from itertools import islice
from typing import Any

import numpy as np

import rules
import rulescore
from ad.errors import MutationError
from ad.runtime.config import ADConfig
from ad.runtime.state import followed, stateful
from ad.transform import PURE_PREFIX
from ad.transform.bindings import NO_VALUE
from ad.transform.guards import ORIGINAL
from rulescore import NoTangent, frule, rrule

__all__ = ["own"]

_ndarray = np.ndarray
_IMMUTABLE = frozenset(
    [float, int, complex, bool, str, bytes, tuple, type(None), frozenset]
    # numpy's scalars are immutable numbers too (np.void, a record, may be a view: not it)
    + [t for t in set(np.sctypeDict.values()) if issubclass(t, (np.number, np.bool_))]
)
_FunctionType, _MethodType, _CellType = types.FunctionType, types.MethodType, types.CellType
_OPAQUE = frozenset([types.ModuleType, type, types.BuiltinFunctionType])
#: The generated primals (reverse and forward mode, and the pure form that
#: reverse over reverse differentiates again, whose own names are PURE_PREFIX's),
#: and the prefixes of the AD's own variables in them.
_PREFIXES = ("_ad_", PURE_PREFIX)
_GENERATED = frozenset(p + "fwd" for p in _PREFIXES)
#: A pushforward generated to be pushed forward again (``nested_pushforward``,
#: third order) renames the AD's variables ``_a<k>_...``, a prefix no name of the
#: function starts with.
_NESTED_NAME = re.compile(r"_a[0-9]+_")


def _ads(name: str) -> bool:
    """Whether a generated frame's variable ``name`` is the AD's own."""
    return name.startswith(_PREFIXES) or _NESTED_NAME.match(name) is not None


#: Where the frames of the AD's runtime come from: everything they hold is the AD's.
_INTERNAL = tuple(
    os.path.dirname(m.__file__) + os.sep
    for m in (sys.modules["ad"], rulescore, rules)
    if m.__file__
)
_DEPTH = 8  # how deep the AD's own holders are searched
_QUICK = 4  # entries of a tape stack the quick search reads
_NO = NoTangent()


def _calibrate() -> tuple[int, int]:
    """The reference counts ``own`` reads when nothing else holds the object:
    measured on this interpreter, with the call shapes ``own`` is called with."""

    def probe(x: Any, name: str, site: str, active: bool) -> tuple[int, int]:
        base = x.base
        return sys.getrefcount(x), sys.getrefcount(base)

    def caller() -> tuple[int, int]:
        x: Any = np.empty(2)[1:]
        x = probe(x, "x", "", True)
        return x

    return caller()


_ALONE, _BASE_ALONE = _calibrate()


def _keyword_copies() -> int:
    """The references CPython's call machinery holds, out of sight of any frame, to
    each positional argument of a call ``g(*args, k=v)`` while ``g`` runs (3.11:
    ``_PyStack_UnpackDict`` copies the positional arguments into a new array):
    measured here, since it depends on the interpreter."""

    def with_keyword(x: Any, *, k: Any) -> int:
        return sys.getrefcount(x)

    def plain(x: Any) -> int:
        return sys.getrefcount(x)

    t = (object(),)
    return with_keyword(*t, k=None) - plain(*t)


_KEYWORD_COPIES = _keyword_copies()


def own(
    x: Any,
    name: str,
    site: str,
    active: bool,
    within: Any = None,
    var: str = "",
    arrays_only: bool = False,
    *,
    forward: bool = False,
) -> Any:
    """``x``, ready to be written in place through the variable ``name``.

    ``active``: the write is differentiated (it rebinds ``name``; the old
    object must not be observable by the user). Otherwise the write runs as
    plain Python: a copy is returned when only the AD's tape holds ``x`` too.
    ``within``: ``x`` is an element read from this container, to be stored
    back (``a[i] += v``, ``name`` being ``"a[i]"`` and ``var`` the variable
    holding ``x``): the container's own reference to it is expected, and for
    an array the element is a view of the very entries the store overwrites.
    ``arrays_only``: other objects are left to other checks (a parameter's).
    ``forward``: the write is in forward-mode code. A user object is followed by
    identity (``ad.runtime.state``) in a pass of the code's own mode, so any may hold it.
    """
    if type(x) in _IMMUTABLE or (arrays_only and not isinstance(x, _ndarray)):
        return x
    if followed(x, forward):
        return x  # a user object's fields are followed by identity (ad.runtime.state)
    # references: the caller's variable, this parameter, getrefcount's argument
    n = sys.getrefcount(x) - _ALONE
    if within is not None and not isinstance(within, _ndarray):
        n -= 1  # the container's slot
    if isinstance(x, _ndarray):
        base = x.base
        if base is not None and within is not None and base is _memory(within):
            base = None  # a view of the array it is stored back into (a[:, 0] += 1)
        # references: the view's base pointer, this variable, getrefcount's argument
        nb = 0 if base is None else sys.getrefcount(base) - _BASE_ALONE
    else:
        base, nb = None, 0
    if n <= 0 and nb <= 0:
        return x
    return _slow(x, base, max(n, 0), max(nb, 0), name, site, active, within, var or name)


def _memory(a: Any) -> Any:
    """The object owning an array's memory (numpy collapses chains of views)."""
    return a if not isinstance(a, _ndarray) or a.base is None else a.base


def _slow(
    x: Any,
    base: Any,
    n: int,
    nb: int,
    name: str,
    site: str,
    active: bool,
    within: Any,
    var: str,
) -> Any:
    """Account for the ``n`` references to ``x`` beyond its variable ``var``
    (and for the ``nb`` ones to a view's base beyond the view)."""
    frame = sys._getframe(2)
    # ``own`` itself, called by forward mode's dispatch (forward over forward runs
    # the nested pushforward's ``own(..., forward=True)`` as one more call)
    me = sys._getframe(1)
    if _Holders(x, var, n).explained(frame) and (
        not nb or _Holders(base, var, nb, x).explained(frame)
    ):
        # Only the AD holds it besides: its tape keeps the object it saved. A
        # differentiated write builds a new array, but writes a list or dict in
        # place: that gets a copy, so that a pullback which saved it (sorted's,
        # a read of its length) still sees it as it was.
        if active:
            return copy.copy(x) if type(x) in (list, dict) else x
        return x.copy() if isinstance(x, _ndarray) else copy.copy(x)
    found = _Holders(x, var, within=within)
    found.search(frame, callee=me)
    unexplained = n - found.internal - len(found.users)
    if nb:
        # The memory belongs to ``base``: every holder of base sees the write.
        of_base = _Holders(base, var, view=x)
        of_base.search(frame, callee=me)
        extra = nb - of_base.internal - len(of_base.users)
        if of_base.users or extra > 0 or (not active and of_base.internal):
            raise MutationError(_view_message(name, site, of_base.users))
        found.internal += of_base.internal
    if active:
        if found.users or unexplained > 0:
            if not found.users:
                found.callers(frame)
            raise MutationError(_shared_message(name, site, found.users))
        return x
    if not found.internal:
        return x  # plain Python, and nothing the backward pass keeps sees it
    if found.users or unexplained > 0:
        if not found.users:
            found.callers(frame)
        raise MutationError(_saved_message(name, site, found.users))
    return x.copy() if isinstance(x, _ndarray) else copy.copy(x)


class _Holders:
    """The holders of ``target`` in the generated frames from ``frame`` outwards:
    ``internal`` counts the AD's references (its ``_ad_`` variables: tape
    entries, temporaries), ``users`` names the user's variables holding it
    (itself, in a container or object, or a view of it)."""

    def __init__(
        self,
        target: Any,
        name: str | None,
        need: int | None = None,
        view: Any = None,
        within: Any = None,
    ) -> None:
        self.target = target
        self.name = name
        # ``within``: the container the target is stored back into (its slot is expected)
        self.within = within
        # ``need``: the quick search, which stops once this many are found
        self.quick = need is not None
        self.need = (1 << 62) if need is None else need
        self.internal = 0
        self.users: list[str] = []
        # ``view``: the view being written, whose reference to its base is expected
        self.seen: set[int] = set() if view is None else {id(view)}

    def explained(self, frame: types.FrameType) -> bool:
        """Whether the AD's variables in ``frame`` (the generated one writing)
        hold all ``need`` references: the quick answer for the usual case, a
        write into an array a pullback saved."""
        own_codes = {id(c) for c in frame.f_code.co_consts if isinstance(c, types.CodeType)}
        free = frame.f_code.co_freevars
        for k, v in _locals(frame):
            if _ads(k) and k not in free and k != self.name:
                self.count(v, _DEPTH, own_codes)
                if self.internal >= self.need:
                    return True
        return False

    def search(
        self,
        frame: types.FrameType | None,
        internal: bool = True,
        callee: types.FrameType | None = None,
    ) -> None:
        """Count the AD's references (unless not ``internal``) and name the user's
        holders, in the generated and runtime frames from ``frame`` outwards
        (``callee``: the frame ``frame`` called, ``own``'s)."""
        first = True
        # the call ``frame`` is making: of a generated frame, or of ``own`` itself,
        # passes keyword arguments through ``f(*args, **kwargs)`` (_keyword_call_copies)
        keyword_callee = callee
        while frame is not None:
            code = frame.f_code
            generated = code.co_name in _GENERATED
            ours = code.co_filename.startswith(_INTERNAL)
            if generated or ours:
                own_codes = {id(c) for c in code.co_consts if isinstance(c, types.CodeType)}
                free = code.co_freevars  # cells of an enclosing frame: counted there, if at all
                variables = _locals(frame)
                if internal and callee is not None and not generated:
                    if keyword_callee is not None:
                        self.internal += _keyword_call_copies(
                            self.target, keyword_callee, variables
                        )
                    self.internal += _star_call_tuple(self.target, frame, callee, variables)
                for k, v in variables:
                    if k in free:
                        # a variable the user's function captures (its cell outlives
                        # the function that made it): the user's; an enclosing
                        # generated frame's own cells are counted there, as its locals
                        if generated and not _ads(k) and self.holds(v, 3):
                            self.users.append(f"{k} (captured from an enclosing function)")
                        continue
                    if (
                        first
                        and generated
                        and (k == self.name or (self.within is not None and v is self.within))
                    ):
                        continue  # the variable being written (or, for its base, the view)
                    # the AD's own code, differentiated again (the kernels of hessian and
                    # hvp, a rule's body): all its variables are the AD's
                    if not generated or ours or _ads(k):
                        if internal:
                            self.count(v, _DEPTH, own_codes)
                    elif self.holds(v, 3):
                        self.users.append(k if first else f"{k} (in {_where(frame)})")
                first = first and (
                    ours or not generated
                )  # the AD's own rule bodies: not the writer
            callee = frame if generated or ours else None
            keyword_callee = frame if generated else None
            frame = frame.f_back

    def callers(self, frame: types.FrameType | None, limit: int = 3) -> None:
        """Name the holders among the variables of the first ``limit`` frames of
        code that is not differentiated (the caller of ``ad.gradient``, ``ad.jvp``,
        ...), for an error: they see an in-place update after the call."""
        while frame is not None and limit > 0:
            code = frame.f_code
            if code.co_name not in _GENERATED and not code.co_filename.startswith(_INTERNAL):
                limit -= 1
                for k, v in _locals(frame):
                    if not k.startswith("@") and self.holds(v, 3):
                        self.users.append(f"{k} (in {_where(frame)})")
                if self.users:
                    return
            frame = frame.f_back

    def count(self, v: Any, depth: int, own_codes: set[int]) -> None:
        """Add to ``internal`` the references to the target held by ``v`` or what
        it holds (AD objects: pullbacks as closures or tuples, their stacks,
        thunks), until ``need`` are found."""
        t = self.target
        if v is t:
            self.internal += 1
            return
        kind = type(v)
        if kind is _ndarray:
            # A view holds one reference, however reached; the quick search does not
            # count it, since the user may hold that view too (the full search names
            # such a holder).
            if v.base is t and id(v) not in self.seen and not self.quick:
                self.seen.add(id(v))
                self.internal += 1
            return
        if depth == 0 or (kind in _IMMUTABLE and kind is not tuple) or kind in _OPAQUE:
            return
        if stateful(v):
            # A user object the tape keeps (for its identity, see ad.runtime.state): what its
            # fields hold, the user sees through it; the full search names its holder.
            return
        key = id(v)
        if key in self.seen:
            return
        self.seen.add(key)
        if self.quick and depth < _DEPTH and kind is not tuple and kind is not _FunctionType:
            # A list, dict or object that a pullback saved may be the user's too (the
            # loop ``for row in M`` keeps M): what it holds the user reaches through it.
            # The quick search credits only the AD's own variables, stacks, tuples and
            # closures; the full search names the user's holders of such a container.
            if kind is not _MethodType and not isinstance(v, tuple):
                return
        if isinstance(v, (tuple, list)):  # pullbacks may be tuple subclasses
            # A stack's newest entries first; the quick search reads only a few.
            items: Any = islice(reversed(v), _QUICK) if self.quick else reversed(v)
        elif kind is dict:
            items = v.values()
        elif kind is _FunctionType:
            if id(v.__code__) in own_codes or not v.__closure__:
                return  # the frame's own closures read its variables, counted there
            code = v.__code__
            if not (code.co_name.startswith(_PREFIXES) or code.co_filename.startswith(_INTERNAL)):
                return  # a function of the user's (the one differentiated): its cells are theirs
            items = []
            # a generated primal shares the user's function's cells: those are the user's
            user = code.co_freevars if code.co_name in _GENERATED else ()
            for name, cell in zip(code.co_freevars, v.__closure__):
                if name in user and not _ads(name):
                    continue
                if id(cell) not in self.seen:
                    self.seen.add(id(cell))
                    try:
                        items.append(cell.cell_contents)
                    except ValueError:  # an empty cell
                        pass
        elif kind is _MethodType:
            items = [v.__self__]
        else:
            items = _fields(v)
        for e in items:
            self.count(e, depth - 1, own_codes)
            if self.internal >= self.need:
                return

    def holds(self, v: Any, depth: int) -> bool:
        """Whether a user's variable's value is the target, a view of it, or a
        container or object holding one."""
        t = self.target
        if v is t:
            return True
        kind = type(v)
        if kind is _ndarray or isinstance(v, _ndarray):
            return v.base is t and t is not None
        if depth == 0 or (kind in _IMMUTABLE and kind is not tuple):
            return False
        if isinstance(v, (tuple, list)):
            return any(self.holds(e, depth - 1) for e in v)
        if kind is dict:
            return any(self.holds(e, depth - 1) for e in v.values())
        if isinstance(v, (types.FunctionType, types.ModuleType, type)):
            return False
        return any(self.holds(e, depth - 1) for e in _fields(v))


def _keyword_call_copies(target: Any, callee: types.FrameType, variables: list) -> int:
    """The references out of sight of any frame that the call of the generated
    ``callee`` made by this frame (``call_function``, whose ``variables`` these
    are: ``fwd(*args, ...)``) holds to ``target``: ``_KEYWORD_COPIES`` per time
    ``target`` is a positional argument, when the call passed keywords (forward
    mode's tangents, ``_ad_nv``, the user's keywords)."""
    if not _KEYWORD_COPIES:
        return 0
    mine = dict(variables)
    args = mine.get("args")
    if type(args) is not tuple or not any(a is target for a in args):
        return 0
    code = callee.f_code
    kwonly = code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
    keywords = (
        "_ad_dt" in kwonly  # forward mode: the tangents, always by keyword
        or bool(mine.get("kwargs"))
        or (NO_VALUE in kwonly and dict(_locals(callee)).get(NO_VALUE) is True)
    )
    if not keywords:
        return 0
    return _KEYWORD_COPIES * sum(1 for a in args if a is target)


_CALL_FUNCTION_EX = dis.opmap.get("CALL_FUNCTION_EX", -1)


def _star_call_tuple(
    target: Any, frame: types.FrameType, callee: types.FrameType, variables: list
) -> int:
    """The references to ``target`` in the tuple of positional arguments that the
    call ``frame`` is making, ``g(a, *b, **k)`` (``CALL_FUNCTION_EX``), builds and
    keeps on its stack while ``g`` (the frame ``callee``) runs, out of sight of any
    variable: forward mode's dispatch of an ``frule`` (``rule.impl(CONFIG, *ts,
    *args, **kw)``), met when a write runs under ``gradient``'s ``frule`` (``hessian``).
    None when the tuple is one of ``frame``'s variables (``g(*args)``), counted there."""
    code = frame.f_code
    lasti = frame.f_lasti
    if lasti < 0 or code.co_code[lasti] != _CALL_FUNCTION_EX:
        return 0
    c = callee.f_code
    mine = dict(_locals(callee))
    # what was passed: a parameter the callee rebinds (``x = G``) keeps it as ``_ad_arg_x``
    positional = [
        mine[ORIGINAL + n] if ORIGINAL + n in mine else mine.get(n)
        for n in c.co_varnames[: c.co_argcount]
    ]
    if c.co_flags & inspect.CO_VARARGS:
        rest = mine.get(c.co_varnames[c.co_argcount + c.co_kwonlyargcount])
        positional.extend(rest if type(rest) is tuple else ())
    hits = sum(1 for a in positional if a is target)
    if not hits:
        return 0
    for _, v in variables:
        if type(v) is tuple and len(v) == len(positional):
            if all(a is b for a, b in zip(v, positional)):
                return 0  # g(*args): the variable's own tuple
    return hits


_SLOTS: dict[type, tuple[str, ...]] = {}


def _fields(v: Any) -> list[Any]:
    """The values of an object's attributes: its ``__dict__`` and ``__slots__``."""
    kind = type(v)
    slots = _SLOTS.get(kind)
    if slots is None:
        names: list[str] = []
        for k in kind.__mro__:
            s = k.__dict__.get("__slots__", ())
            names.extend([s] if isinstance(s, str) else s)
        if len(_SLOTS) >= 1024:  # bounded: classes made per call leave
            _SLOTS.clear()
        slots = _SLOTS[kind] = tuple(n for n in names if n not in ("__dict__", "__weakref__"))
    out = [getattr(v, n) for n in slots if hasattr(v, n)]
    d = getattr(v, "__dict__", None)
    if type(d) is dict:
        out.extend(d.values())
    return out


def _locals(frame: types.FrameType) -> list[tuple[str, Any]]:
    """A frame's variables, read without leaving references behind (before 3.13, a
    function's ``f_locals`` is a snapshot dict kept on the frame: emptied after
    reading). A module's or class body's ``f_locals`` is its namespace itself
    (a script's globals): never emptied."""
    d = frame.f_locals
    items = list(d.items())
    if type(d) is dict and frame.f_code.co_flags & inspect.CO_OPTIMIZED:
        d.clear()
    return items


def _where(frame: types.FrameType) -> str:
    return f"the caller at {frame.f_code.co_filename}:{frame.f_lineno}"


def _others(users: list[str]) -> str:
    if not users:
        return (
            "something else holds it too (a list, dict or object attribute, a view, "
            "the caller, a global or a closure)"
        )
    return "it is also reachable as " + ", ".join(repr(u) for u in users)


def _shared_message(name: str, site: str, users: list[str]) -> str:
    return (
        f"{site}: {name!r} is updated in place, but {_others(users)}: in Python every holder "
        "sees the change, which the AD cannot follow (it differentiates the update as a new "
        f"value of {name!r}).\n"
        f"To fix: write {name} = {name} <op> ... (a new object) and use the new value "
        f"where you need it, or copy first ({name} = {name}.copy())"
        + (
            ", or pass a copy the caller does not keep (f(x.copy()), ad.gradient(f, x.copy()))."
            if any("(in the caller" in u for u in users)
            else "."
        )
    )


def _view_message(name: str, site: str, users: list[str]) -> str:
    held = f" (the array is reachable as {', '.join(repr(u) for u in users)})" if users else ""
    return (
        f"{site}: {name!r} is updated in place, but it is a view of another array{held}: "
        "in Python the write changes that array too, which the AD cannot follow.\n"
        f"To fix: take a copy ({name} = {name}.copy()) to update on its own, or build the "
        "whole array out of place (np.where, np.concatenate, a list then np.array)."
    )


def _saved_message(name: str, site: str, users: list[str]) -> str:
    return (
        f"{site}: {name!r} is updated in place, but the backward pass has saved it and "
        f"{_others(users)}: the write would change the saved values.\n"
        f"To fix: write {name} = {name} <op> ... (a new object), or copy it before the "
        "differentiated code reads it."
    )


# Differentiated again (the generated code is itself transformed at second
# order), ``own`` is called through its rules, under the outer level's runtime,
# whose references to the object cannot be counted. There the user's holders in
# the generated frames (aliases, containers, objects, views) are still found and
# refused; a holder outside them (a global, a caller that is not differentiated)
# is seen at first order only. What ``own`` returns is that object or a copy: the
# derivative passes through.


def _own_nested(
    x: Any,
    name: str,
    site: str,
    active: bool,
    within: Any = None,
    var: str = "",
    arrays_only: bool = False,
) -> Any:
    if type(x) in _IMMUTABLE or within is not None or (arrays_only and not isinstance(x, _ndarray)):
        return x
    frame = sys._getframe(2)
    found = _Holders(x, name)
    found.search(frame, internal=False)
    if found.users:
        raise MutationError(_shared_message(name, site, found.users))
    base = x.base if isinstance(x, _ndarray) else None
    if base is not None:
        of_base = _Holders(base, name, view=x)
        of_base.search(frame, internal=False)
        if of_base.users:
            raise MutationError(_view_message(name, site, of_base.users))
    if active:
        return x
    return x.copy() if isinstance(x, _ndarray) else copy.copy(x)


@rrule.register(own, config=ADConfig)
def _(config: Any, x: Any, *args: Any, forward: bool = False) -> Any:
    def own_pullback(ȳ: Any) -> tuple:
        return (_NO, ȳ) + (_NO,) * len(args)

    if followed(x, forward):  # its fields are followed by identity, as at first order
        return x, own_pullback
    return _own_nested(x, *args), own_pullback


@frule.register(own, config=ADConfig)
def _(
    config: Any, ḟ: Any, *args: Any, forward: bool = False
) -> Any:  # args: the tangents, then the arguments (four to seven)
    return _own_nested(*args[len(args) // 2 :]), args[0]


# At third order the rules above are differentiated again, as source: the check
# itself (it reads frames, empties their snapshots) is not differentiated; its
# value is ``x`` or a copy of it, through which the derivative passes.
@rrule.register(_own_nested, config=ADConfig)
def _(config: Any, x: Any, *args: Any) -> Any:
    def own_nested_pullback(ȳ: Any) -> tuple:
        return (_NO, ȳ) + (_NO,) * len(args)

    return _own_nested(x, *args), own_nested_pullback


@frule.register(_own_nested, config=ADConfig)
def _(config: Any, ḟ: Any, *args: Any) -> Any:  # the tangents, then the arguments
    return _own_nested(*args[len(args) // 2 :]), args[0]
