"""For ADs and rule packages built on ``rules``: the helpers its rules are made of.

An AD that reads rules' pullbacks on its fast paths, or a package that writes rules
in the same conventions, needs more of ``rules`` than the rules it registers. The
names here are that part, public: they follow semantic versioning like the rest of
the public API (``rules.inventory``, ``rules.functional``), so a change inside
``rules`` that would break them is a breaking change of ``rules``. Everything else
in ``rules`` (the modules whose names start with ``_``) may change in any release.

Broadcasting and zeros:

* :func:`unbroadcast`: a cotangent summed back to its argument's shape, projected.
* :func:`is_zero`: whether a (co)tangent is ``ZeroTangent()`` or ``NoTangent()``.
* :func:`dense`: an array-like's tangent as one array, zeros filled in.

Reference counts (for code that writes into arrays nobody else holds):

* ``getrefcount``, ``REFCOUNTS_CALIBRATED``.

Products and reductions, the pieces of the rules for ``@`` and whole-array
``np.sum`` / ``np.mean``:

* :func:`product`, :func:`matmul_fast_case`, :func:`matmul_fast_cotangents`;
* :func:`whole_array_pullback`.

Elementwise numpy functions:

* ``HOLOMORPHIC`` (ufunc -> its derivative), ``OUTPUT_ONLY`` (those whose
  derivative reads only the output), :func:`times_reusing`, :class:`PrimalLike`,
  :func:`project_like`.

Tuples, lists and dicts:

* :func:`seq_entries`, :func:`seq_cotangent`, :func:`entry_cotangent`;
* what iterating a container yields: :func:`item_tangents`, :func:`items_cotangent`
  (a dict yields its keys, which carry no derivative: :func:`yields_no_tangents`);
* the rules for ``operator.getitem`` on them: :func:`sequence_getitem_rrule`,
  :func:`sequence_getitem_frule`, :func:`dict_getitem_rrule`,
  :func:`dict_getitem_frule`.

Whose rule is it:

* :func:`is_standard_rule`: whether a rule found in ``rrule.table`` or
  ``frule.table`` is one ``rules`` registered, rather than a user's override (an
  AD may replace only ``rules``' own rules by faster code that computes the same).

Each name is the very object the rules use (importing it here costs nothing);
the examples below run as doctests.

>>> import operator
>>> import numpy as np
>>> from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk
>>> from rules import extension as ext
>>> ext.unbroadcast(np.ones(3), np.ones((2, 3))), ext.is_zero(ZeroTangent())
(array([2., 2., 2.]), True)
>>> ext.dense([1.0, ZeroTangent()], [3.0, 4.0])
array([1., 0.])
>>> ext.getrefcount(object()) >= 1, type(ext.REFCOUNTS_CALIBRATED)
(True, <class 'bool'>)
>>> a, b = np.array([[1.0, 2.0]]), np.array([3.0, 4.0])
>>> ext.product(a, b), ext.matmul_fast_case(a, b)
(array([11.]), True)
>>> ext.matmul_fast_cotangents(a, b, np.array([10.0]), eager=True)
(NoTangent(), array([[30., 40.]]), array([10., 20.]))
>>> ext.whole_array_pullback(np.zeros(2), 0.5, "mean")(4.0)
(NoTangent(), array([2., 2.]))
>>> ext.HOLOMORPHIC[np.sin](np.array([0.0]), None), np.exp in ext.OUTPUT_ONLY
(array([1.]), True)
>>> ext.times_reusing(np.array([2.0]), np.array([3.0]))
array([6.])
>>> ext.project_like(ext.PrimalLike(np.ones(2, np.float32)), np.array([1.0, 2.0]))
array([1., 2.], dtype=float32)
>>> ext.seq_entries(Tangent[tuple](1.0, 2.0), 2), ext.seq_cotangent((1.0, 2.0), [3.0, 4.0])
([1.0, 2.0], Tangent[tuple](3.0, 4.0))
>>> ext.item_tangents({"a": 1.0}, Tangent[dict](a=2.0), 1), ext.items_cotangent({"a": 1.0}, [3.0])
([NoTangent()], NoTangent())
>>> unthunk(ext.entry_cotangent(2, 0, 5.0))
Tangent[list](5.0, ZeroTangent())
>>> ext.sequence_getitem_rrule((1.0, 2.0), 0)[1](3.0)
(NoTangent(), Tangent[tuple](3.0, ZeroTangent()), NoTangent())
>>> ext.sequence_getitem_frule(None, Tangent[tuple](1.0, 2.0), None, (5.0, 6.0), 1)
(6.0, 2.0)
>>> ext.dict_getitem_rrule({"w": 1.0}, "w")[1](2.0)
(NoTangent(), Tangent[dict]({'w': 2.0}), NoTangent())
>>> ext.dict_getitem_frule(None, Tangent[dict](w=1.5), None, {"w": 1.0}, "w")
(1.0, 1.5)
>>> ext.is_standard_rule(frule.table.lookup(operator.mul, (float, float)))
True
"""

from __future__ import annotations

import sys
from typing import Any

from rulescore import Rule

from . import _util
from ._numpy_elementwise import (
    HOLOMORPHIC,
    OUTPUT_ONLY,
    PrimalLike,
    project_like,
    times_reusing,
)
from ._numpy_linear import dense
from ._numpy_products import matmul_fast_case, matmul_fast_cotangents, product
from ._numpy_reductions import whole_array_pullback
from ._sequences import (
    dict_getitem_frule,
    dict_getitem_rrule,
    entry_cotangent,
    item_tangents,
    items_cotangent,
    seq_cotangent,
    seq_entries,
    sequence_getitem_frule,
    sequence_getitem_rrule,
    yields_no_tangents,
)
from ._util import is_zero, unbroadcast

__all__ = [
    "HOLOMORPHIC",
    "OUTPUT_ONLY",
    "REFCOUNTS_CALIBRATED",
    "PrimalLike",
    "dense",
    "dict_getitem_frule",
    "dict_getitem_rrule",
    "entry_cotangent",
    "getrefcount",
    "is_standard_rule",
    "is_zero",
    "item_tangents",
    "items_cotangent",
    "matmul_fast_case",
    "matmul_fast_cotangents",
    "product",
    "project_like",
    "seq_cotangent",
    "seq_entries",
    "sequence_getitem_frule",
    "sequence_getitem_rrule",
    "times_reusing",
    "unbroadcast",
    "whole_array_pullback",
    "yields_no_tangents",
]

REFCOUNTS_CALIBRATED: bool = _util.REFCOUNTS_CALIBRATED
"""Whether ``getrefcount`` reports CPython's real reference counts.

True on CPython 3.11 to 3.13, whose counts the in-place paths of ``rules`` (and of
an AD built on it) were measured on; elsewhere ``getrefcount`` reads every object
as shared, so no path writes into an array another name may hold.

>>> from rules.extension import REFCOUNTS_CALIBRATED
>>> import sys
>>> REFCOUNTS_CALIBRATED == (sys.implementation.name == "cpython" and (3, 11) <= sys.version_info[:2] <= (3, 13))
True
"""

getrefcount = _util.getrefcount
"""``sys.getrefcount`` where ``REFCOUNTS_CALIBRATED``, otherwise a function that reads
every object as shared (a count of ``2**30``).

Code that may write into an array it was handed (``np.multiply(ȳ, p, out=p)``)
asks this first: a temporary passed straight to a function has a count of 2 there
(the parameter and ``getrefcount``'s own argument) exactly when nothing else holds it.

>>> from rules.extension import getrefcount, REFCOUNTS_CALIBRATED
>>> import numpy as np
>>> def held_elsewhere(a):
...     return getrefcount(a) > 2
>>> held_elsewhere(np.zeros(3)) == (not REFCOUNTS_CALIBRATED)   # a temporary
True
>>> x = np.zeros(3)
>>> held_elsewhere(x)                                            # also named x
True
"""

HOLOMORPHIC = HOLOMORPHIC
"""Each holomorphic numpy ufunc with a rule (``np.sin``, ``np.exp``, ...) -> its
derivative as a function of ``(x, Ω)`` (the input and the output).

For a ufunc in ``OUTPUT_ONLY`` the derivative reads only ``Ω`` (``x`` may be
``None``). The rules multiply a cotangent by the conjugate of the derivative.

>>> import numpy as np
>>> from rules.extension import HOLOMORPHIC
>>> HOLOMORPHIC[np.log](np.array([2.0]), None), HOLOMORPHIC[np.exp](None, 3.0)
(array([0.5]), 3.0)
"""

OUTPUT_ONLY = OUTPUT_ONLY
"""The ufuncs of ``HOLOMORPHIC`` whose derivative reads only the output ``Ω``
(``np.exp``, ``np.tanh``, ``np.sqrt``, ...): their pullbacks need not keep ``x``.

>>> import numpy as np
>>> from rules.extension import HOLOMORPHIC, OUTPUT_ONLY
>>> np.tanh in OUTPUT_ONLY, np.sin in OUTPUT_ONLY, OUTPUT_ONLY <= HOLOMORPHIC.keys()
(True, False, True)
"""


def is_standard_rule(rule: Any) -> bool:
    """Whether ``rule`` is one of the rules that ``rules`` itself defines.

    ``rule`` is a ``rulescore.Rule`` (what ``rrule.table.lookup(f, types)`` or
    ``frule.table.lookup`` returns), its implementation (``rule.impl``), or
    ``None`` (no rule: False). A rule is ``rules``' own when its implementation was
    written in a module of ``rules``, or made by ``rulescore.scalar_rule`` from
    partial derivatives written there. A rule a user (or another package)
    registers, for the same function and types or not, is not, and neither is an
    opt-out; nor are the rules ``rules`` declares with
    ``rulescore.non_differentiable`` (their implementation is rulescore's own,
    the same as a user's).

    An AD may replace a standard rule by faster code that computes the same
    values; it must call the rule itself when this is False, so that a rule the
    user registered wins. Ask again after a registration: ``rrule.table.version``
    changes with each.

    >>> import operator
    >>> from rulescore import frule, rrule
    >>> from rules.extension import is_standard_rule
    >>> is_standard_rule(rrule.table.lookup(operator.mul, (float, float)))
    True
    >>> class Money(float):
    ...     pass
    >>> @frule.register(operator.mul)
    ... def money_mul_frule(ḟ, ȧ, ḃ, a: Money, b: Money):
    ...     return a * b, ȧ * b + a * ḃ
    >>> is_standard_rule(frule.table.lookup(operator.mul, (Money, Money)))
    False
    >>> is_standard_rule(frule.table.lookup(operator.mul, (float, float)))
    True

    See also: ``rulescore.RuleTable``.
    """
    if isinstance(rule, Rule):
        rule = rule.impl
    if rule is None:
        return False
    if _defined_in_rules(rule):
        return True
    # rulescore.scalar_rule writes the implementation; the derivative is its partials'.
    partials = getattr(rule, "scalar_partials", None)
    return partials is not None and _defined_in_rules(partials)


def _defined_in_rules(fn: Any) -> bool:
    """Whether the function ``fn`` (a bound method's function) was defined in a module of
    ``rules``: its globals are that module's namespace (unlike ``__module__``, which
    any code may set)."""
    fn = getattr(fn, "__func__", fn)
    namespace = getattr(fn, "__globals__", None)
    if type(namespace) is not dict:
        return False
    name = namespace.get("__name__")
    if type(name) is not str or not (name == "rules" or name.startswith("rules.")):
        return False
    module = sys.modules.get(name)
    return module is not None and module.__dict__ is namespace
