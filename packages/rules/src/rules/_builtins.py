"""Rules for Python's builtins: arithmetic, ``sum``/``min``/``max``, conversions, iteration.

* ``abs`` and two-argument ``pow`` share the ``operator`` rules; three-argument
  ``pow`` (modular) is non-differentiable.
* ``sum(xs[, start])`` over a tuple, list or array: each entry gets ``ȳ``
  (reduced to its shape when the entries broadcast against each other).
* ``max``/``min`` (several arguments or one iterable, with ``key=``/``default=``):
  the whole cotangent goes to the element Python returns, which is the *first*
  maximal (minimal) one, so ties are broken deterministically and the gradient
  is a valid subgradient.
* ``float``/``complex``/``divmod``: as their math says; ``complex(a, b)`` gives
  ``∂a = ȳ`` and ``∂b = -iȳ`` (real parts kept for real ``a``, ``b``).
* ``zip``/``enumerate`` over tuples, lists and arrays are structural: the output
  is the iterator Python returns, and its cotangent is the sequence of the
  cotangents of the items it yielded (shorter if the loop stopped early), which
  the pullback transposes back onto the inputs. In forward mode an iterator
  another of these frules returned (``enumerate(zip(xs, ys))``) is read into a
  list first: its tangent is the list of its items' tangents.
* ``copy.deepcopy(x)``: a copy of the same structure, so its derivative is the
  identity, structure for structure (arrays copied included; a ``memo`` gets
  no tangent).
* ``len``, ``range``, ``isinstance``, ``round``, ``int``, ``bool``, ``hash``,
  ``id``, ``type``, ``str``, ``repr`` ... are non-differentiable.
"""

from __future__ import annotations

import builtins
import copy
import numbers
import operator
from collections.abc import KeysView, Mapping
from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    NoTangent,
    ProjectTo,
    Tangent,
    ZeroTangent,
    frule,
    non_differentiable,
    rrule,
    unthunk,
)

from ._arithmetic import BINARY, UNARY, Num, binary_rules, register_binary, register_unary
from ._sequences import item_tangents, items_cotangent, seq_entries, yields_no_tangents
from ._util import unbroadcast

__all__: list[str] = []

_NO = NoTangent()
_ZERO = ZeroTangent()
_Iterable = tuple | list | np.ndarray | Mapping | KeysView  # a dict yields its keys

register_unary(builtins.abs, (Num,), UNARY["abs"], "abs")
register_binary(builtins.pow, (Num, Num), *BINARY["pow"], "pow")
non_differentiable(builtins.pow, object, object, object)


def _is_zero(t: Any) -> bool:
    return isinstance(t, AbstractZero)


# --- sum ---------------------------------------------------------------------------


@rrule.register(builtins.sum)
def _(xs: _Iterable, *start: Any, **kwargs: Any):
    Ω = builtins.sum(xs, *start, **kwargs)
    items = list(xs)

    def sum_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if _is_zero(ȳ) or yields_no_tangents(xs):
            return (_NO, items_cotangent(xs, []), *(_ZERO for _ in start))
        x̄s = items_cotangent(xs, [unbroadcast(x, ȳ) for x in items])
        return (_NO, x̄s, *(unbroadcast(s, ȳ) for s in start))

    return Ω, sum_pullback


@frule.register(builtins.sum)
def _(ḟ, *args: Any, **kwargs: Any):
    n = len(args) // 2
    ẋs, xs = args[0], args[n]
    if not isinstance(xs, _Iterable):  # a generator: no rule (it would be consumed)
        return None
    Ω = builtins.sum(xs, *args[n + 1 :], **kwargs)
    t: Any = _ZERO
    for ẋ in (*item_tangents(xs, ẋs, len(xs)), *args[1:n]):
        t = t + unthunk(ẋ)
    if not _is_zero(t) and np.shape(t) != np.shape(Ω):
        t = np.array(np.broadcast_to(t, np.shape(Ω)))
    return Ω, ProjectTo(Ω)(t)


# --- max and min -------------------------------------------------------------------


def _chosen(f: Any, args: tuple, kwargs: dict) -> tuple[Any, list, int | None]:
    """The result of ``f(*args, **kwargs)``, the candidates and the chosen index."""
    if len(args) == 1:
        # Iterate once: iterating an array again would make new scalar objects.
        items = list(args[0])
        Ω = f(items, **kwargs)
    else:
        items = list(args)
        Ω = f(*args, **kwargs)
    # Python returns the first extremal element; find it by identity (an equal
    # earlier object would itself be the first extremal one).
    # (a loop rather than next() of a generator: an AD differentiating this rule
    # at second order follows the loop)
    index = None
    for k, v in enumerate(items):
        if v is Ω:
            index = k
            break
    if index is None:  # the default= of an empty iterable
        return Ω, items, None
    return Ω, items, index


def _extremum_rules(f: Any) -> None:
    name = f.__name__

    def extremum_rrule(*args: Any, **kwargs: Any) -> Any:
        Ω, items, index = _chosen(f, args, kwargs)

        def extremum_pullback(ȳ):
            ȳ = unthunk(ȳ)
            if _is_zero(ȳ) or index is None:
                return (_NO, *(_ZERO for _ in args))
            x̄ = ProjectTo(items[index])(ȳ)
            if len(args) == 1:
                entries = [_ZERO] * len(items)
                entries[index] = x̄
                return _NO, items_cotangent(args[0], entries)
            return (_NO, *(x̄ if k == index else _ZERO for k in range(len(args))))

        extremum_pullback.__name__ = extremum_pullback.__qualname__ = f"{name}_pullback"
        return Ω, extremum_pullback

    def extremum_frule(ḟ: Any, *targs: Any, **kwargs: Any) -> Any:
        n = len(targs) // 2
        ẋs, args = targs[:n], targs[n:]
        Ω, items, index = _chosen(f, args, kwargs)
        if index is None:
            return Ω, _ZERO
        ẋ = item_tangents(args[0], ẋs[0], len(items))[index] if n == 1 else ẋs[index]
        return Ω, ProjectTo(Ω)(unthunk(ẋ))

    rrule.register_signature(f, extremum_rrule, (_Iterable,))
    frule.register_signature(f, extremum_frule, (_Iterable,))
    # Two or more arguments of any type: Python compares them with < or >.
    rrule.register(f)(_varargs_signature(extremum_rrule))
    frule.register(f)(_varargs_frule_signature(extremum_frule))


def _varargs_signature(impl: Any) -> Any:
    def extremum_rrule(a: Any, b: Any, *rest: Any, **kwargs: Any) -> Any:
        return impl(a, b, *rest, **kwargs)

    extremum_rrule.__name__ = extremum_rrule.__qualname__ = impl.__name__
    return extremum_rrule


def _varargs_frule_signature(impl: Any) -> Any:
    def extremum_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) < 4:  # one argument: only tuples, lists and arrays have a rule
            return None
        return impl(ḟ, *args, **kwargs)

    extremum_frule.__name__ = extremum_frule.__qualname__ = impl.__name__
    return extremum_frule


_extremum_rules(builtins.max)
_extremum_rules(builtins.min)


# --- conversions -------------------------------------------------------------------


@rrule.register(builtins.float)
def _(x: Num):
    Ω = float(x)

    def float_pullback(ȳ):
        return _NO, ProjectTo(x)(unthunk(ȳ))

    return Ω, float_pullback


@frule.register(builtins.float)
def _(ḟ, ẋ, x: Num):
    return float(x), ProjectTo(1.0)(unthunk(ẋ))


@rrule.register(builtins.complex)
def _(a: Num, *b: Num):
    Ω = complex(a, *b)

    def complex_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if _is_zero(ȳ):
            return (_NO, _ZERO, *(_ZERO for _ in b))
        # Ω = a + i b is holomorphic in each: ∂a = ȳ, ∂b = ȳ conj(i)
        return (_NO, ProjectTo(a)(ȳ), *(ProjectTo(v)(-1j * ȳ) for v in b))

    return Ω, complex_pullback


@frule.register(builtins.complex)
def _(ḟ, *args: Any):
    n = len(args) // 2
    if n not in (1, 2) or not all(isinstance(v, Num) for v in args[n:]):
        return None
    Ω = complex(*args[n:])
    t: Any = _ZERO
    for ṫ, scale in zip(args[:n], (1, 1j)):
        ṫ = unthunk(ṫ)
        if not _is_zero(ṫ):
            t = t + scale * ṫ
    return Ω, ProjectTo(Ω)(t)


# The remainder's rules, called directly (not through ``rrule``/``frule``'s dispatch)
# so that an AD can differentiate divmod's rules themselves (second order).
_mod_rrule, _mod_frule = binary_rules(operator.mod, *BINARY["mod"], "mod")


@rrule.register(builtins.divmod)
def _(x: Num, y: Num):
    Ω = divmod(x, y)
    _, pb = _mod_rrule(x, y)

    def divmod_pullback(ȳ):
        # the quotient is piecewise constant: only the remainder's cotangent flows
        r̄ = seq_entries(ȳ, 2)[1]
        if _is_zero(unthunk(r̄)):
            return _NO, _ZERO, _ZERO
        return pb(r̄)

    return Ω, divmod_pullback


@frule.register(builtins.divmod)
def _(ḟ, ẋ, ẏ, x: Num, y: Num):
    Ω = divmod(x, y)
    _, ṙ = _mod_frule(ḟ, ẋ, ẏ, x, y)
    return Ω, Tangent[tuple](ZeroTangent(), ṙ)


# --- iteration ---------------------------------------------------------------------


def _transpose_items(ȳ: Any, n_inputs: int, its: tuple, offset: int) -> list:
    """Per input, the entry cotangents: ``ȳ[k][j + offset]`` is item ``k`` of input ``j``.

    Built by comprehensions, not by writes into nested lists, so that reverse over
    reverse differentiates this pullback too."""
    ȳ = unthunk(ȳ)
    if _is_zero(ȳ):
        return [[_ZERO] * len(it) for it in its]
    items = [unthunk(item) for item in ȳ]  # may be shorter: the loop stopped early
    return [
        [_ZERO if _is_zero(item) else unthunk(item[j + offset]) for item in items]
        + [_ZERO] * (len(its[j]) - len(items))
        for j in range(n_inputs)
    ]


_Iter = tuple | list | np.ndarray | range


@rrule.register(builtins.iter)
def _(it: _Iter):
    """``iter(xs)`` (a user class's ``__iter__`` returning ``iter(self.xs)``): an
    iterator whose cotangent, as ``zip``'s, is the list of its items' cotangents."""
    Ω = iter(it)

    def iter_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if _is_zero(ȳ):
            return (_NO, _NO if isinstance(it, range) else _ZERO)
        entries = [unthunk(e) for e in ȳ] + [_ZERO] * (len(it) - len(ȳ))  # stopped early
        return (_NO, items_cotangent(it, entries))

    return Ω, iter_pullback


@frule.register(builtins.iter)
def _(ḟ, ẋ, it: _Iter):
    return iter(it), item_tangents(it, ẋ, len(it))


def _sequences_of(its: tuple, tangents: tuple) -> list | None:
    """``its`` as sequences whose items' tangents ``item_tangents`` reads, or None
    (the frule declines). An iterator that another iteration frule returned
    (``enumerate(zip(xs, ys))``, ``zip(iter(xs), ys)``) has the list of its items'
    tangents as its tangent: it is read into a list, the same items in the same
    order. Any other iterator (a generator, ``itertools.count()``) is left alone,
    unconsumed, whatever the others are."""
    if all(isinstance(it, _Iter) for it in its):
        return list(its)
    for it, ẋ in zip(its, tangents):
        if not isinstance(it, _Iter) and (type(ẋ) is not list or iter(it) is not it):
            return None
    out = []
    for it, ẋ in zip(its, tangents):
        if not isinstance(it, _Iter):
            it = list(it)
            if len(it) != len(ẋ):
                raise ValueError(f"an iterator of {len(it)} items has {len(ẋ)} tangents")
        out.append(it)
    return out


@rrule.register(builtins.zip)
def _(*its: _Iter, **kwargs: Any):
    Ω = zip(*its, **kwargs)

    def zip_pullback(ȳ):
        per_input = _transpose_items(ȳ, len(its), its, 0)
        return (_NO, *(items_cotangent(it, e) for it, e in zip(its, per_input)))

    return Ω, zip_pullback


@frule.register(builtins.zip)
def _(ḟ, *args: Any, **kwargs: Any):
    n = len(args) // 2
    its = _sequences_of(args[n:], args[:n])
    if its is None:
        return None
    Ω = zip(*its, **kwargs)
    m = min((len(it) for it in its), default=0)
    cols = [item_tangents(it, ẋ, len(it)) for ẋ, it in zip(args[:n], its)]
    return Ω, [Tangent[tuple](*(c[k] for c in cols)) for k in range(m)]


@rrule.register(builtins.enumerate)
def _(it: _Iter, *start: numbers.Integral):
    Ω = enumerate(it, *start)

    def enumerate_pullback(ȳ):
        (entries,) = _transpose_items(ȳ, 1, (it,), 1)
        return (_NO, items_cotangent(it, entries), *(_NO for _ in start))

    return Ω, enumerate_pullback


@frule.register(builtins.enumerate)
def _(ḟ, *args: Any):
    n = len(args) // 2
    seqs = _sequences_of(args[n : n + 1], args[:1])
    if seqs is None:
        return None
    (it,) = seqs
    Ω = enumerate(it, *args[n + 1 :])
    entries = item_tangents(it, args[0], len(it))
    return Ω, [Tangent[tuple](_NO, e) for e in entries]


for _f in (
    builtins.len,
    builtins.range,
    builtins.isinstance,
    builtins.issubclass,
    builtins.int,
    builtins.bool,
    builtins.hash,
    builtins.id,
    builtins.type,
    builtins.str,
    builtins.repr,
    builtins.callable,
    builtins.hasattr,
    builtins.any,
    builtins.all,
    builtins.ord,
    builtins.chr,
    builtins.format,
):
    non_differentiable(_f)
non_differentiable(builtins.float, str)
# round of a number (a user class's __round__ is its own code, differentiated by an AD)
non_differentiable(builtins.round, Num)
non_differentiable(builtins.round, Num, numbers.Integral | None)
non_differentiable(builtins.complex, str)


@rrule.register(copy.deepcopy)
def _(x: Any, *memo: Any) -> Any:
    y = copy.deepcopy(x, *memo)

    def deepcopy_pullback(ȳ: Any) -> tuple:
        return (_NO, ȳ, *(_NO for _ in memo))

    return y, deepcopy_pullback


@frule.register(copy.deepcopy)
def _(ṡ: Any, *args: Any) -> Any:
    n = len(args) // 2
    return copy.deepcopy(*args[n:]), args[0]
