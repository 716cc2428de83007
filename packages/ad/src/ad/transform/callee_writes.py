"""Whether the functions a function calls may write a captured or global holder.

``transform.holders`` reads a captured or global container through a followed
alias from a function's start when a function it calls may write it: the writer
may not have run yet when the reader is transformed (so ``CAPTURED_WRITTEN`` does
not know it). This answers from the callees' code, a few calls deep: a callee
that names the holder (a global or a captured variable) and writes an item or an
attribute, or calls a method that changes a container. Conservative: a wrong yes
only costs following the holder.

>>> G = []
>>> def push(v):
...     G.append(v)
>>> def read():
...     return len(G)
>>> written_by(G, [push], 3, set()), written_by(G, [read], 3, set())
(True, False)
"""

from __future__ import annotations

import ast
import dis
import types
from typing import Any

__all__ = ["called_functions", "callees", "library", "written_by"]

#: Modules whose functions write nothing a caller reads as differentiated.
_LIBRARIES = ("builtins", "numpy", "math", "cmath", "operator", "scipy", "rules", "rulescore")


def library(value: Any) -> bool:
    """A function of a library (numpy, math, ...): it writes into no holder of ours."""
    mod = getattr(value, "__module__", None) or ""
    return mod.split(".")[0] in _LIBRARIES


#: methods of dicts, lists and sets that change them in place
_MUTATORS = frozenset(
    "append extend insert pop remove clear sort reverse update setdefault popitem add "
    "discard __setitem__ __delitem__ __iadd__".split()
)
#: instructions that write an item or an attribute
_WRITE_OPS = frozenset(["STORE_SUBSCR", "DELETE_SUBSCR", "STORE_ATTR", "DELETE_ATTR"])


def callees(read: set[str], resolve: Any) -> list[types.FunctionType]:
    """The Python functions of the user's that the names in ``read`` hold."""
    out = []
    for name in read:
        v = resolve(name)
        if type(v) is types.FunctionType and not library(v):
            out.append(v)
    return out


def written_by(value: Any, fns: list[types.FunctionType], depth: int, seen: set) -> bool:
    """Whether one of ``fns`` (or a function they name, ``depth`` calls deep) may
    write into ``value``, a captured or global holder, by a name of its own: it
    names ``value`` (a global or a captured variable) and writes an item or an
    attribute, or calls a method that changes a container (``G.append(v)``,
    ``D[k] = v``). Conservative: a false answer only costs following ``value``."""
    for fn in fns:
        code = fn.__code__
        if code in seen:
            continue
        seen.add(code)
        names = _named_values(fn)
        if any(v is value for v in names.values()) and _writes(code):
            return True
        if depth > 1:
            inner = [v for v in names.values() if type(v) is types.FunctionType and not library(v)]
            if written_by(value, inner, depth - 1, seen):
                return True
    return False


def _named_values(fn: types.FunctionType) -> dict[str, Any]:
    """What the globals and captured variables ``fn``'s code names hold now."""
    out = {n: fn.__globals__[n] for n in fn.__code__.co_names if n in fn.__globals__}
    for n, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            out[n] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    return out


def _writes(code: types.CodeType) -> bool:
    """Whether ``code`` (or code nested in it) writes an item or an attribute, or
    names a method that changes a container."""
    if _MUTATORS.intersection(code.co_names):
        return True
    if any(ins.opname in _WRITE_OPS for ins in dis.get_instructions(code)):
        return True
    return any(_writes(c) for c in code.co_consts if isinstance(c, types.CodeType))


def called_functions(call: ast.Call, resolve: Any) -> list[types.FunctionType]:
    """The user's Python functions ``call`` calls or hands on (``map(g, xs)``)."""
    named = [call.func, *call.args, *(k.value for k in call.keywords)]
    return callees({a.id for a in named if isinstance(a, ast.Name)}, resolve)
