"""What ``gradient`` and ``pullback`` hand back: the arguments' cotangents as the
caller receives them.

``to_user`` turns one cotangent into plain Python and numpy values (zeros become
None, thunks are evaluated, structural tangents become tuples, lists and dicts);
``user_results`` makes each result an object the caller may change freely (an
array sharing memory with the seed, an argument or another result is copied) and
projects a complex cotangent of a real argument onto the reals.

>>> user_results((None, 2.0, {"w": 1.5}), (1.0, {"w": 3.0}))
(2.0, {'w': 1.5})
"""

from __future__ import annotations

import sys
from typing import Any

from rulescore import AbstractZero, NotImplementedTangent, ProjectTo, Tangent, ZeroTangent, unthunk

__all__ = ["to_user", "user_results"]

_np = sys.modules.get("numpy")
_ndarray: Any = None if _np is None else _np.ndarray
_ARRAYS: tuple = () if _np is None else (_np.ndarray, _np.generic)
#: cotangents ``to_user`` returns as they are (a read-only array aside)
_PLAIN: frozenset = frozenset([float])
if _np is not None:  # ad depends on numpy; keep the lookups exact by type
    _PLAIN = frozenset([float, _np.ndarray, _np.float64])


def to_user(ct: Any) -> Any:
    """A cotangent as ``gradient`` reports it: zeros become None, thunks are evaluated,
    tuple/list/dict tangents become tuples/lists/dicts; a read-only array (a whole-array
    sum's ``uniform`` cotangent, eight bytes, or a read-only view of a value the
    computation holds) becomes an array of its own."""
    if ct.__class__ in _PLAIN:  # the usual case: an array or a float, nothing to convert
        if ct.__class__ is _ndarray and not ct.flags.writeable:
            return ct.copy()
        return ct
    ct = unthunk(ct)
    if ct.__class__ is _ndarray:
        return to_user(ct)
    if isinstance(ct, AbstractZero):
        return None
    if isinstance(ct, NotImplementedTangent):
        ct._fail()
    if isinstance(ct, Tangent):
        b: Any = ct._backing  # a tuple or a dict, by kind
        kind = type(ct)._kind
        if kind == "positional":
            P = type(ct).primal_type
            vals = [v if v.__class__ is float else to_user(v) for v in b]
            return vals if P is list else tuple(vals)
        if kind == "mapping":
            return {k: v if v.__class__ is float else to_user(v) for k, v in b.items()}
        order = type(ct)._allowed or ()
        keys = [k for k in order if k in b] + [k for k in b if k not in order]
        return type(ct)._from_backing(
            {k: v if (v := b[k]).__class__ is float else _field_to_user(v) for k in keys}
        )
    if type(ct) is list:
        return [v if v.__class__ is float else to_user(v) for v in ct]
    if type(ct) is tuple:
        return tuple([v if v.__class__ is float else to_user(v) for v in ct])
    if type(ct) is dict:
        return {k: to_user(v) for k, v in ct.items()}
    return ct


def user_results(cts: Any, args: tuple, seed: Any = None) -> tuple:
    """The arguments' cotangents ``cts[1:]`` as the caller receives them
    (``to_user``), each an object the caller may change freely: an array that
    shares memory with the seed, an argument or another result is copied, and
    a complex cotangent of a real argument (from a rule that did not project)
    is projected onto the reals, as ``ProjectTo`` of that argument does."""
    if seed is None:
        for g, x in zip(cts[1:], args):
            if g.__class__ is not float or x.__class__ is not float:
                break
        else:  # scalar code: floats are the caller's already
            return tuple(cts[1:])
    out = [to_user(c) for c in cts[1:]]
    if all(map(_floats_only, out)):  # no array: nothing shares memory or needs projecting
        return tuple(_keys_in_order(g, x) for g, x in zip(out, args))
    taken: set[int] = set()
    if seed.__class__ is not float:
        _claim(seed, taken, False)
    for x in args:
        if x.__class__ is _ndarray:  # the usual case, without _claim's dispatch
            taken.add(_owner(x))
        elif x.__class__ is not float:
            _claim(x, taken, False)
    for i, (g, x) in enumerate(zip(out, args)):
        if g.__class__ is float and x.__class__ is float:  # scalar code: nothing to do
            continue
        if g.__class__ is _ndarray and x.__class__ is _ndarray:
            if g.dtype.kind == "c" and x.dtype.kind in "fiu":
                g = ProjectTo(x)(g)
            key = _owner(g)
            if key in taken:
                g = g.copy()
                key = id(g)
            taken.add(key)
            out[i] = g
            continue
        if g is not None and _is_real(x) and _is_complex(g):
            g = ProjectTo(x)(g)
        if x.__class__ is _ndarray and g is not None and g.__class__ is not _ndarray:
            g = ProjectTo(x)(g)  # a 0-d array's: numpy's arithmetic on it gives scalars
        out[i] = _claim(_keys_in_order(g, x), taken, True)
    return tuple(out)


def _floats_only(g: Any) -> bool:
    """Whether ``g`` is None, a float, or a container or ``Tangent`` of floats."""
    if g.__class__ is float or g is None:
        return True
    kind = type(g)
    if kind is dict:
        entries: Any = g.values()
    elif kind is tuple or kind is list:
        entries = g
    elif isinstance(g, Tangent):
        b = g._backing
        entries = b.values() if type(b) is dict else b
    else:
        return False
    for e in entries:
        if e.__class__ is not float:
            return False
    return True


def _keys_in_order(g: Any, x: Any) -> Any:
    """A dict's gradient with its keys in the dict's order (the backward pass adds
    entries in the order it reaches them: the reads' reverse), nested dicts too."""
    if type(g) is not dict or not isinstance(x, dict):
        return g
    out = {}
    for k in x:
        if k in g:
            e = g[k]
            out[k] = e if e.__class__ is float else _keys_in_order(e, x[k])
    return out


def _owner(a: Any) -> int:
    """The identity of the object whose memory an array uses."""
    while isinstance(a, _ndarray) and a.base is not None:
        a = a.base
    return id(a)


def _claim(v: Any, taken: set[int], fresh: bool) -> Any:
    """``v`` with every array in it recorded in ``taken``; with ``fresh``, an array
    whose memory is taken already is replaced by a copy first."""
    kind = type(v)
    if kind is float:  # scalar code: nothing to record
        return v
    if kind is _ndarray:
        key = _owner(v)
        if fresh and key in taken:
            v = v.copy()
            key = id(v)
        taken.add(key)
        return v
    if kind is tuple or kind is list or kind is dict:
        entries = v.values() if kind is dict else v
        for e in entries:
            if e.__class__ is not float:
                break
        else:
            return v  # floats: nothing to record or copy
        if not fresh:  # an argument: record what it holds
            for e in entries:
                _claim(e, taken, False)
            return v
        if kind is dict:
            return {k: _claim(e, taken, True) for k, e in v.items()}
        return kind([_claim(e, taken, True) for e in v])
    if isinstance(v, Tangent) and fresh:
        b = v._backing
        if type(b) is dict:
            return type(v)._from_backing({k: _claim(e, taken, fresh) for k, e in b.items()})
        return v
    if isinstance(v, Tangent):
        for e in v._backing.values() if type(v._backing) is dict else v._backing:
            _claim(e, taken, fresh)
    return v


def _is_real(x: Any) -> bool:
    if isinstance(x, (int, float)):
        return not isinstance(x, bool)
    return isinstance(x, _ARRAYS) and x.dtype.kind in "fiu"


def _is_complex(g: Any) -> bool:
    return isinstance(g, complex) or (isinstance(g, _ARRAYS) and g.dtype.kind == "c")


def _field_to_user(v: Any) -> Any:
    v = unthunk(v)
    if isinstance(v, AbstractZero):
        return ZeroTangent()
    return to_user(v)
