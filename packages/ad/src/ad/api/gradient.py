"""The public entry points: ``gradient``, ``withgradient``, ``pullback``, ``code_adjoint``."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import numbers
import sys
import types
from collections.abc import Callable
from typing import Any, NamedTuple

from ad.api.params import Grads, Params, grads_of
from ad.api.user_results import user_results
from ad.api.written_arguments import held, written_arguments
from ad.errors import CotangentShapeError, NonScalarOutputError
from ad.runtime.cotangents import from_user
from ad.runtime.fused_regions import NOVALUE
from ad.runtime.reverse import ONCE, rcall, rcall_kw
from ad.runtime.reverse_functions import call_function
from ad.runtime.single_use import handoff, new_token
from ad.runtime.state import deep, follow
from ad.runtime.state import scope as state_scope
from ad.runtime.tracebacks import entry_point, hide_internals
from rulescore import DuckArray, Tangent, ZeroTangent, rrule

__all__ = ["code_adjoint", "gradient", "pullback", "user_results", "withgradient"]


_FunctionType = types.FunctionType
_RRULES = rrule.table._rules
_partial = functools.partial
_ZERO = ZeroTangent()
_SEEDS: dict = {float: 1.0}
_np = sys.modules.get("numpy")
_ndarray: Any = None if _np is None else _np.ndarray
#: arguments that are never objects a function writes (``written_arguments``)
_PLAIN_ARGS: frozenset = frozenset([float, int, _ndarray])
if _np is not None:  # ad depends on numpy; keep the lookups exact by type
    _SEEDS.update({_np.float64: _np.float64(1), _np.float32: _np.float32(1)})


class WithGradient(NamedTuple):
    """``withgradient``'s result: the function's value and the gradient tuple
    (``Grads`` for implicit parameters, ``withgradient(f, Params(...))``)."""

    val: Any
    grad: tuple | Grads


def _top_call(
    f: Callable, args: tuple, novalue: bool = False, kwargs: dict | None = None
) -> tuple[Any, Callable]:
    """``f(*args, **kwargs)`` and its pullback: one differentiation's forward pass."""
    with state_scope():
        return _unscoped_top_call(f, args, novalue, kwargs)


def _unscoped_top_call(
    f: Callable, args: tuple, novalue: bool = False, kwargs: dict | None = None
) -> tuple[Any, Callable]:
    usual = f.__class__ is _FunctionType  # a function of floats and arrays: nothing to follow
    if usual:
        for a in args:  # a loop, not any(): every call pays it
            if a.__class__ not in _PLAIN_ARGS:
                usual = False
                break
    if not usual:
        written = written_arguments(f, args)
        if written:
            return _following_written(written, f, args, novalue, kwargs)
    return _plain_top_call(f, args, novalue, kwargs)


def _following_written(
    written: list[int], f: Callable, args: tuple, novalue: bool, kwargs: dict | None
) -> tuple[Any, Callable]:
    """``f(*args, **kwargs)`` with the user objects it writes followed by identity
    from the start (``ad.api.written_arguments``); each one's follow pullback turns
    its cotangent along the parameter into that of its state before the call."""
    follows = {i: rcall(follow, held(f, args, i))[1] for i in written}
    y, pb = _plain_top_call(f, args, novalue, kwargs)

    def written_arguments_pullback(ȳ: Any, _once: Any = new_token()) -> tuple:  # noqa: B008
        if ONCE.expect is not None:
            handoff(pb, _once)
        cts = list(pb(ȳ))
        for i, follow_pb in follows.items():
            cts[1 + i] = follow_pb(cts[1 + i])[1]  # RECEIVER: cts[0], the method's
        return tuple(cts)

    return y, written_arguments_pullback


def _plain_top_call(
    f: Callable, args: tuple, novalue: bool = False, kwargs: dict | None = None
) -> tuple[Any, Callable]:
    # At the top level nobody asks for f's own tangent: captured variables
    # are constants, so work that only feeds them is never done. ``novalue``: nor
    # for the value (``gradient``), which a fused sum that is returned may skip.
    if type(f) is _partial and type(f.func) is _FunctionType and f.func not in _RRULES:
        if f not in _RRULES:  # a partial with rules of its own is called through them
            return _partial_call(f, args, kwargs or {}, novalue)
    if kwargs:
        return _keyword_call(f, args, kwargs, novalue)
    if type(f) is _FunctionType and f not in _RRULES:
        return call_function(f, args, None, False, novalue=novalue)
    return rcall(f, *args)


def _partial_call(
    p: functools.partial, args: tuple, kwargs: dict, novalue: bool = False
) -> tuple[Any, Callable]:
    """``p(*args, **kwargs)`` at the top level: the function ``p`` wraps, called with
    the bound arguments (data, as a captured variable is) inactive, so nothing is
    computed for them; the pullback returns ``(∂p, ∂args...)`` as for ``p`` itself."""
    fn: types.FunctionType = p.func  # type: ignore[assignment]  # the caller checked it
    nb = len(p.args)
    keywords = {**p.keywords, **kwargs}
    mask = (1 << nb) - 1 | (_keyword_mask(fn, keywords) if keywords else 0)
    full = (*p.args, *args)
    spread = _as_positional(fn, full, keywords) if keywords else None
    if spread is not None:  # partial(loss, X=X, y=y): called as loss(w, X, y)
        full, keywords = spread, {}
    y, pb = call_function(fn, full, keywords or None, False, inactive=mask, novalue=novalue)
    n = len(args)

    def top_partial_pullback(ȳ: Any, _once: Any = new_token()) -> tuple:  # noqa: B008
        if ONCE.expect is not None:
            handoff(pb, _once)
        cts = pb(ȳ)
        return (_ZERO, *cts[1 + nb : 1 + nb + n])

    return y, top_partial_pullback


def _keyword_call(
    f: Callable, args: tuple, kwargs: dict, novalue: bool = False
) -> tuple[Any, Callable]:
    """``f(*args, **kwargs)`` differentiated with respect to ``args`` only: the
    pullback returns ``(∂f, ∂args...)``, as without keywords. A Python function's
    parameters that the keywords fill start inactive (see ``rcall_masked``), so
    nothing is computed for them; the rest (keyword-only parameters, ``**kw``)
    are differentiated and their cotangents dropped."""
    if type(f) is _FunctionType and f not in _RRULES:
        mask = _keyword_mask(f, kwargs)
        spread = _as_positional(f, args, kwargs)
        if spread is None:
            y, pb = call_function(f, args, kwargs, False, inactive=mask, novalue=novalue)
        else:  # the parameters that follow the arguments, by name: positional
            y, pb = call_function(f, spread, None, False, inactive=mask, novalue=novalue)
    else:
        y, pb = rcall_kw(f, args, kwargs)
    n = 1 + len(args)

    def keyword_pullback(ȳ: Any, _once: Any = new_token()) -> tuple:  # noqa: B008
        if ONCE.expect is not None:
            handoff(pb, _once)
        return pb(ȳ)[:n]

    return y, keyword_pullback


def _as_positional(f: types.FunctionType, args: tuple, kwargs: dict) -> tuple | None:
    """``args`` followed by the values of ``kwargs`` when these name exactly the
    positional parameters of ``f`` that follow ``args`` (``loss(w, X=X, y=y)`` of
    ``def loss(w, X, y)``), so that ``f`` is called as with positional arguments
    alone, its simplest and quickest path; else None."""
    code = f.__code__
    names = code.co_varnames[: code.co_argcount]
    n, k = len(args), len(kwargs)
    if n < code.co_posonlyargcount or n + k > len(names):
        return None
    for name in names[n : n + k]:
        if name not in kwargs:
            return None
    return (*args, *(kwargs[name] for name in names[n : n + k]))


def _keyword_mask(f: types.FunctionType, kwargs: dict) -> int:
    """The bits of ``f``'s positional parameters that ``kwargs`` fills."""
    code = f.__code__
    names = code.co_varnames[: code.co_argcount]
    mask = 0
    for i, name in enumerate(names):
        if name in kwargs:
            mask |= 1 << i
    return mask


def bind_keywords(f: Callable, kwargs: dict) -> Callable:
    """``f`` with ``kwargs`` bound, for the entry points that pass no keywords further
    down (``Params``, ``hessian``, nested differentiation): a Python closure, whose
    ``f(*args, **kwargs)`` every mode follows (nested differentiation does not
    follow a ``functools.partial``). Its captured variables are ``f`` and
    ``kwargs``: a caller that needs ``f``'s own tangent reads field ``"f"``."""
    if not kwargs:
        return f

    def with_keywords(*args: Any) -> Any:
        return f(*args, **kwargs)

    with_keywords.__name__ = getattr(f, "__name__", "with_keywords")
    return with_keywords


@entry_point
def pullback(f: Callable, /, *args: Any, **kwargs: Any) -> tuple[Any, Callable]:
    """The value of ``f(*args, **kwargs)`` and a function mapping an output
    cotangent to the positional arguments' cotangents (a tuple, ``None`` where no
    gradient flows). Keyword arguments are passed to ``f`` and not differentiated.

    >>> import numpy as np
    >>> y, back = pullback(lambda x: x * 2.0, np.array([1.0, 2.0]))
    >>> back(np.array([1.0, 10.0]))
    (array([ 2., 20.]),)
    >>> y, back = pullback(lambda x, scale: x * scale, 3.0, scale=5.0)
    >>> y, back(1.0)
    (15.0, (5.0,))

    See also: gradient, withgradient.
    """
    try:
        if len(args) == 1 and isinstance(args[0], Params):  # implicit parameters
            return params_pullback(bind_keywords(f, kwargs), args[0])
        with deep:
            y, pb = _top_call(f, args, kwargs=kwargs)
    except Exception as e:
        if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
            raise e
        raise

    @entry_point
    def back(ȳ: Any) -> tuple:
        try:
            _check_seed(ȳ, y, f)
            with deep:
                return user_results(pb(from_user(ȳ)), args, ȳ)
        except Exception as e:
            if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
                raise e
            raise

    return y, back


def _check_seed(ȳ: Any, y: Any, f: Callable) -> None:
    """Refuse a seed shaped unlike the output it is the cotangent of (an array
    output's seed: an array, or a number broadcast to it, of the output's shape)."""
    np = sys.modules.get("numpy")
    if np is None or type(y) is not np.ndarray or not isinstance(ȳ, np.ndarray):
        return
    if ȳ.shape != y.shape:
        fname = getattr(f, "__name__", repr(f))
        raise CotangentShapeError(
            f"pullback({fname}, ...): the seed passed to its back function has shape "
            f"{ȳ.shape}, but {fname}'s output has shape {y.shape}; the seed is the "
            "cotangent of the output and must be shaped like it.\n"
            "To fix: pass an array of the output's shape (e.g. np.ones_like(y))."
        )


def _pullback(f: Callable, *args: Any) -> tuple[Any, Callable]:
    """Internal form: the pullback returns ``(∂f, ∂args...)``, ∂f included
    (the tangent of a closure's captured variables), as rulescore values."""
    y, pb = rcall(f, *args)

    def internal_pullback(ȳ: Any) -> tuple:
        # Its caller may keep and call it many times: never the generated adjoint
        # itself, which a caller running once could tell to free its tape.
        return pb(ȳ)

    return y, internal_pullback


def _seed(y: Any, f: Callable) -> Any:
    seed = _SEEDS.get(y.__class__)
    if seed is not None:  # float, numpy float64/float32: the usual scalar losses
        return seed
    np = sys.modules.get("numpy")
    if isinstance(y, bool) or not isinstance(y, numbers.Real):
        if np is not None and isinstance(y, DuckArray) and y.shape == () and y.dtype.kind in "fiu":
            # In the output's own library (a dask or CuPy 0-d array stays one).
            return np.ones_like(y, dtype=y.dtype if y.dtype.kind == "f" else np.float64)
        what = type(y).__name__
        shape = getattr(y, "shape", None)
        if shape is not None:
            what += f" of shape {shape}"
        if isinstance(y, numbers.Complex) or (
            np is not None and getattr(getattr(y, "dtype", None), "kind", None) == "c"
        ):
            hint = "take the real part, abs, or abs2 of the output"
        else:
            hint = "reduce it to a number (e.g. np.sum), or use ad.pullback with a seed of the same shape"
        raise NonScalarOutputError(
            f"gradient({getattr(f, '__name__', f)!s}, ...) needs the function to return a real "
            f"number, got {what}.\nTo fix: {hint}."
        )
    if np is not None and isinstance(y, np.floating):
        return type(y)(1)
    return 1.0


@entry_point
def gradient(f: Callable, /, *args: Any, **kwargs: Any) -> tuple | Grads:
    """The gradient of a real-valued ``f`` at ``args``: one entry per argument.

    Entries are floats, complex numbers (``∂f/∂re + i ∂f/∂im``) or arrays for
    numbers and arrays; tuples, lists and dicts for containers; ``Tangent[P]``
    for dataclasses and objects; ``None`` where no gradient flows.

    >>> gradient(lambda x: 3 * x**2 + 2 * x + 1, 5)
    (32.0,)
    >>> gradient(lambda a, b: a * b, 2.0, 3.0)
    (3.0, 2.0)

    Keyword arguments are passed to ``f`` and not differentiated (constants,
    like ``argnums`` left out in JAX); ``f`` is positional-only, so even a
    keyword named ``f`` goes to the function:

    >>> def loss(w, target=0.0, weight=1.0):
    ...     return weight * (w - target) ** 2
    >>> gradient(loss, 3.0, target=1.0, weight=0.5)
    (2.0,)

    The value itself is not returned, and work that only computes it may be
    skipped: a fused numpy sum the function returns (see the README's "How it
    works") computes only what its derivative needs.

    See also: withgradient, pullback, jacobian.
    """
    try:
        if not args:
            _check_called_with_arguments("gradient", f)
        return _withgradient(f, args, novalue=True, kwargs=kwargs)[1]
    except Exception as e:
        if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
            raise e
        raise


@entry_point
def withgradient(f: Callable, /, *args: Any, **kwargs: Any) -> WithGradient:
    """``(val=f(*args, **kwargs), grad=gradient)``. When ``f`` returns a tuple, the
    first element is differentiated (the rest are auxiliary outputs); for a
    namedtuple or dataclass, the first field; for a dict, the first value. Keyword arguments are passed to ``f``, not differentiated.

    >>> withgradient(lambda x: (x * x, "aux"), 3.0)
    WithGradient(val=(9.0, 'aux'), grad=(6.0,))
    >>> withgradient(lambda x, p=1: x**p, 3.0, p=3)
    WithGradient(val=27.0, grad=(27.0,))
    """
    try:
        if not args:
            _check_called_with_arguments("withgradient", f)
        return WithGradient(*_withgradient(f, args, kwargs=kwargs))
    except Exception as e:
        if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
            raise e
        raise


def _check_called_with_arguments(name: str, f: Callable) -> None:
    """Refuse ``gradient(f)`` for an ``f`` that needs arguments: a caller who meant
    ``grad(f)``, the gradient as a function, would otherwise meet an error from
    inside the generated code."""
    try:
        inspect.signature(f).bind()
    except TypeError:
        fname = getattr(f, "__name__", type(f).__name__)
        raise TypeError(
            f"ad.{name}({fname}) was given no point to differentiate at: ad.{name}(f, *args) "
            f"differentiates f at args, and {fname} takes arguments.\n"
            f"To fix: pass them, ad.{name}(f, x), or use ad.grad(f) for the gradient as a "
            "function (JAX style): ad.grad(f)(x)."
        ) from None
    except ValueError:  # no signature to check (a builtin): let the call tell
        pass


def _withgradient(
    f: Callable, args: tuple, novalue: bool = False, kwargs: dict | None = None
) -> tuple[Any, tuple | Grads]:
    """``withgradient``'s ``(val, grad)`` as a plain pair; with ``novalue``
    (``gradient``), ``val`` may be ``NOVALUE``."""
    with deep:  # the forward and the backward pass
        return _withgradient_deep(f, args, novalue, kwargs)


def _withgradient_deep(
    f: Callable, args: tuple, novalue: bool, kwargs: dict | None
) -> tuple[Any, tuple | Grads]:
    if len(args) == 1 and isinstance(args[0], Params):  # implicit parameters
        return params_withgradient(bind_keywords(f, kwargs or {}), args[0])
    y, pb = _top_call(f, args, novalue, kwargs)
    if y is NOVALUE:  # a returned fused sum that skipped its value: a float
        return y, user_results(_call_once(pb, 1.0), args)
    seed: Any = _SEEDS.get(y.__class__)
    if seed is not None:  # a float loss: the usual case
        return y, user_results(_call_once(pb, seed), args)
    fields = _record_fields(y)
    if novalue and (isinstance(y, (tuple, dict)) or fields):
        size = f" of {len(y)}" if isinstance(y, (tuple, dict)) else ""
        raise NonScalarOutputError(
            f"gradient({getattr(f, '__name__', f)!s}, ...) needs the function to return a real "
            f"number, got a {type(y).__name__}{size}.\nTo fix: return the loss alone, or "
            "use ad.withgradient, which differentiates a tuple's first element (a "
            "namedtuple's or dataclass's first field, a dict's first value) and returns "
            "the rest as auxiliary outputs."
        )
    if fields:  # a namedtuple or dataclass: its first field, as a tuple's first element
        seed = Tangent[type(y)]._from_backing({fields[0]: _seed(getattr(y, fields[0]), f)})  # type: ignore[misc]
    elif isinstance(y, tuple):
        if not y:
            raise NonScalarOutputError("withgradient: the function returned an empty tuple")
        seed = (_seed(y[0], f), *([ZeroTangent()] * (len(y) - 1)))
    elif isinstance(y, dict):
        if not y:
            raise NonScalarOutputError("withgradient: the function returned an empty dict")
        first = next(iter(y))
        seed = {first: _seed(y[first], f)}
    else:
        seed = _seed(y, f)
    return y, user_results(_call_once(pb, seed), args, seed)


def _record_fields(y: Any) -> tuple[str, ...]:
    """The fields of a namedtuple or dataclass instance ``y`` (``()`` for anything
    else): ``withgradient`` differentiates the first, as a tuple's first element."""
    if isinstance(y, tuple):
        return tuple(getattr(type(y), "_fields", ()))
    if dataclasses.is_dataclass(y) and not isinstance(y, type):
        return tuple(fl.name for fl in dataclasses.fields(y))
    return ()


def _call_once(pb: Callable, seed: Any) -> Any:
    """``pb(seed)`` for a pullback nobody else holds or calls again: a generated adjoint
    may then free its tape as it goes (see ``ad.runtime.reverse.claim``)."""
    ONCE.expect = pb
    try:
        return pb(seed)
    finally:
        ONCE.expect = None


@entry_point
def code_adjoint(f: Callable, *args: Any) -> str:
    """The generated primal and adjoint of ``f`` as readable Python source: the form
    ``ad.gradient(f, *args)`` runs (a tuple that ``f`` unpacks by ``*`` is unpacked
    for the length it has in ``args``).

    Each statement carries a ``# line N`` comment with its source line.

    >>> def f(x):
    ...     return x * x
    >>> print(code_adjoint(f, 3.0))  # doctest: +ELLIPSIS
    # generated from ...
    ...
    """
    try:
        from ad.transform import adjoint_source, star_lengths, transformed

        if type(f) is not types.FunctionType:
            raise TypeError(f"code_adjoint needs a Python function, got {type(f).__name__}")
        entry = transformed(f, False)
        lengths = star_lengths(entry, args) if entry.starred else ()
        return adjoint_source(f, closure_active=False, lengths=lengths)
    except Exception as e:
        if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
            raise e
        raise


# --- differentiating with respect to Params ------------------------------------


def _call(fn: Callable) -> Any:
    return fn()


def params_withgradient(f: Callable, ps: Params) -> Any:
    """``withgradient(f, ps)``: ``(val=f(), grad=Grads)``."""
    val, (df,) = withgradient(_call, f)
    return WithGradient(val, grads_of(f, df, ps))


def params_pullback(f: Callable, ps: Params) -> tuple[Any, Callable]:
    """``pullback(f, ps)``: the value and a pullback returning ``Grads``."""
    y, back = pullback(_call, f)

    def params_back(ȳ: Any) -> Any:
        (df,) = back(ȳ)
        return grads_of(f, df, ps)

    return y, params_back
