"""Pass 4b, alias groups: local names that may hold an object another name writes.

Input: an ANF ``FunctionDef`` (after ``holders``) and the activity seeds. Output:
the seeds grown by the local names that may reach, by identity, an object
that an active name reaches.

A write by identity (``outer[0][0] = v``, ``o.child.v = v``, a method writing
``self.d[k] = v``, a closure writing what it captured) is seen through every
name that holds the object written, or holds something that holds it. The
runtime keeps such an object's derivatives by identity (``ad.runtime.state``),
but only a read the generated code differentiates consults it: a read through
an *inactive* name runs as plain Python and would take the written value as a
constant (a silent zero). So the names that may share objects are grouped,
flow-insensitively, by the statements that can make two names reach the same
object:

* ``a = b``, ``t = [b, c]`` (any display), ``a[k] = b``, ``a.n = b``,
  ``a.append(b)``; ``a += b``, ``t = a + b`` and ``t = a * b`` where an
  operand is a display (a list's concatenation or repetition holds the same
  items; arithmetic on numbers and arrays links nothing);
* ``t = a[k]``, ``t = a.n``, ``x, y = t``, ``for t in a``;
* ``t = g(a, b)``: a call of anything but a numerical library or a builtin that
  returns no object of its arguments (the result may hold its arguments, or
  what the function ``g`` captured: a closure, a bound method); a user class or
  function named here links every result of calling it (class attributes,
  module state);
* ``def g(...)`` capturing ``a``: ``g`` may write into what ``a`` holds.

In a group with an active name, every local name is made active, so that its
reads are differentiated and see the writes (``rules_objects``' reads consult
the pass's store). Parameters group names but are not made active: an inactive
parameter is data the caller asked no derivative for (its reads are checked at
run time instead, ``holders``). Over-approximating costs only differentiating
a few reads that carry nothing.

>>> import ad
>>> def f(x):
...     inner = [0.0]
...     outer = [inner]
...     outer[0][0] = x * x           # written through outer
...     return inner[0]               # read through inner
>>> ad.gradient(f, 3.0)
(6.0,)
"""

from __future__ import annotations

import ast
import types
from typing import Any

from ad.transform.activity import (
    active_names,
    free_names,
    param_names,
    read_and_stored,
    statements,
)
from ad.transform.anf_base import IN_PLACE_HELPERS
from ad.transform.callee_writes import library
from ad.transform.holders import LOCAL, UNBOUND, name_resolver

__all__ = ["aliased_seeds"]

#: operator helpers whose result can hold the items of a list operand
_SEQUENCE_OPS = frozenset(["_ad_op_add", "_ad_op_mul", "_ad_iop_add"])
#: the AD's reads of an item or attribute, and follows, of their first argument
_READS = frozenset(
    ["_ad_op_getitem", "_ad_getattr", "_ad_getattr_object", "_ad_unpack", "_ad_unpack_star"]
    + ["_ad_follow", "_ad_follow_written", "_ad_follow_after"]
)
#: the AD's own helpers that return nothing of their arguments
_NOT_ALIASING = frozenset(
    ["_ad_len", "_ad_range", "_ad_isinstance", "_ad_type", "_ad_unfollowed", "_ad_method_form"]
    + ["_ad_obtained_entries", "_ad_obtained_unchanged"]
)
_OWN = ("ad", "rules", "rulescore")
#: the generated primals, differentiated again at higher orders (``build.PURE_PREFIX``)
_GENERATED = frozenset(["_ar_fwd"])
#: library modules whose functions return new numbers or arrays, not their arguments
_NUMERICAL = ("numpy", "math", "cmath", "scipy", "rules", "rulescore")


def aliased_seeds(fn: ast.FunctionDef, seeds: set[str], plain: frozenset[str], f: Any) -> set[str]:
    """``seeds`` grown by the local names grouped with an active one (see the module).
    The AD's own code, differentiated at higher orders, is left as it is: it follows
    objects along variables there (``ad.runtime.state.suspended``)."""
    own = (getattr(f, "__module__", None) or "").split(".")[0] in _OWN
    if (own and not f.__code__.co_filename.startswith("<")) or fn.name in _GENERATED:
        return seeds  # (a doctest's example, though run in our module, is the user's)
    params = set(param_names(fn))
    stored = read_and_stored(fn)[1]
    resolve = _through_modules(fn, name_resolver(f, params | stored))
    groups = _Groups()
    displays = _displays(fn)
    for s in statements(fn.body):
        _link(s, groups, plain, resolve, displays)
    if not groups.parent:
        return seeds
    # the user's names: the ANF's temporaries become active from what they are bound to
    local = {n for n in stored - params if not n.startswith(("_ad_", "_ar_"))}
    seeds = set(seeds)
    while True:
        active = active_names(fn, seeds, plain)
        roots = {groups.find(n) for n in active if n in groups.parent}
        grown = {n for n in local if n not in active and n in groups.parent}
        grown = {n for n in grown if groups.find(n) in roots}
        if not grown:
            return seeds
        seeds |= grown


def _through_modules(fn: ast.FunctionDef, resolve: Any) -> Any:
    """``resolve``, with the temporaries bound to a module's attribute (``math.sin``,
    ``np.linalg.norm``: ``t = _ad_getattr(math, 'sin')``) resolved to that attribute,
    so that a call of one is judged as a call of the function by its own name."""
    bound: dict[str, Any] = {}
    for s in statements(fn.body):
        v = getattr(s, "value", None)
        if not (
            isinstance(s, ast.Assign)
            and isinstance(s.targets[0], ast.Name)
            and isinstance(v, ast.Call)
            and isinstance(v.func, ast.Name)
            and v.func.id == "_ad_getattr"
            and len(v.args) == 2
            and isinstance(v.args[0], ast.Name)
            and isinstance(v.args[1], ast.Constant)
        ):
            continue
        module = resolve(v.args[0].id)
        if isinstance(module, types.ModuleType):
            attr = getattr(module, str(v.args[1].value), UNBOUND)
            if attr is not UNBOUND:
                bound[s.targets[0].id] = attr
    if not bound:
        return resolve
    return lambda name: bound[name] if name in bound else resolve(name)


class _Groups:
    """Union-find over names."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, n: str) -> str:
        parent = self.parent
        root = parent.setdefault(n, n)
        while parent[root] != root:
            root = parent[root]
        while parent[n] != root:  # path compression
            parent[n], n = root, parent[n]
        return root

    def union(self, names: list[str]) -> None:
        if len(names) < 2:
            return
        first = self.find(names[0])
        for n in names[1:]:
            r = self.find(n)
            if r != first:
                self.parent[r] = first


def _displays(fn: ast.FunctionDef) -> set[str]:
    """The names some assignment binds to a list, tuple, set or dict display."""
    out = set()
    for s in statements(fn.body):
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
            v = s.value
            if isinstance(v, (ast.List, ast.Tuple, ast.Set, ast.Dict)) or (
                isinstance(v, ast.Call)
                and isinstance(v.func, ast.Name)
                and v.func.id in ("_ad_mk_list", "_ad_mk_dict", "_ad_concat_list")
            ):
                out.add(s.targets[0].id)
    return out


def _link(
    s: ast.stmt, groups: _Groups, plain: frozenset[str], resolve: Any, displays: set[str]
) -> None:
    """Group the names that statement ``s`` can make reach one object."""
    if isinstance(s, ast.Assign):
        targets = [n.id for t in s.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        groups.union(targets + _sources(s.value, plain, resolve, displays))
    elif isinstance(s, ast.For):
        targets = [n.id for n in ast.walk(s.target) if isinstance(n, ast.Name)]
        groups.union(targets + _sources(s.iter, plain, resolve, displays))
    elif isinstance(s, ast.FunctionDef):
        captured = [n for n in free_names(s) if resolve(n) is LOCAL]
        groups.union([s.name, *captured])


def _sources(value: ast.expr, plain: frozenset[str], resolve: Any, displays: set[str]) -> list[str]:
    """The names whose objects the value of ``value`` may hold (or be)."""
    if isinstance(value, ast.Name):
        return [value.id]
    if isinstance(value, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Starred)):
        return [n.id for n in ast.walk(value) if isinstance(n, ast.Name)]
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
        return []
    func = value.func.id
    if func in plain or func in _NOT_ALIASING:
        return []
    if func.startswith(("_ad_op_", "_ad_iop_")) and func not in _READS:
        # arithmetic makes a new number or array; ``+`` and ``*`` of a list display
        # (``[row] * 3``, ``rows + [r]``) hold the same items
        if func not in _SEQUENCE_OPS:
            return []
        operands = [a.id for a in value.args if isinstance(a, ast.Name)]
        return operands if displays.intersection(operands) else []
    args = [a for a in value.args if isinstance(a, ast.Name)]
    args += [k.value for k in value.keywords if isinstance(k.value, ast.Name)]
    names = [a.id for a in args]
    if func == "_ad_getattr" and args and isinstance(resolve(names[0]), types.ModuleType):
        return []  # a module's function (math.sin): a fresh value, holding nothing of ours
    if func in _READS or func in IN_PLACE_HELPERS:
        # the object read or written, and the value written: not the key or name
        objs = value.args[:1] + (value.args[-1:] if func in IN_PLACE_HELPERS else [])
        return [a.id for a in objs if isinstance(a, ast.Name)]
    if func.startswith("_ad_"):
        return names  # the AD's displays, concatenations, method forms
    found = resolve(func)
    if found is LOCAL:
        return [func, *names]  # a closure or a bound method: what it holds too
    if found is UNBOUND:
        return names
    module = (getattr(found, "__module__", None) or "").split(".")[0]
    if module in _NUMERICAL:
        return []
    if callable(found) and not library(found):
        return [f"<global>.{func}", *names]  # state kept by a user class or function
    return names
