"""``test_rrule``, ``test_frule``, ``test_scalar``: check rules against finite differences.

How the pullback is checked (J'ȳ for a random output cotangent ȳ): for each
leaf of each argument (a number or an array, found by a path such as
``args[1].x``),

* leaves with at most ``max_coordinates`` coordinates are compared element by
  element against ``j_vp``: one finite-difference estimate of ``J·eᵢ`` per
  coordinate, dotted with ȳ;
* larger leaves are checked along ``n_directions`` random directions ẋ (standard
  normal entries, so every coordinate moves by about the step):
  ``<x̄, ẋ>`` from the pullback against ``<ȳ, J·ẋ>``, one vector-valued finite
  difference each, to a tolerance relative to ``‖x̄‖`` (the typical size of
  ``<x̄, ẋ>``). A wrong cotangent ``x̄ = J'ȳ + δ`` gives ``<δ, ẋ>`` of typical
  size ``‖δ‖``, so it escapes one direction only if ``‖δ‖/‖x̄‖`` is
  about ``rtol`` or smaller, or by a chance of order ``rtol·‖x̄‖/‖δ‖``, for
  each of the directions; any real mistake is caught, at a cost independent
  of the size of the input (a 100x100 matrix takes milliseconds where
  coordinate-wise differences would take seconds).

The frule's ẏ is compared with the finite-difference ``J·ẋ`` in one estimate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import AbstractZero, NoTangent, frule, rrule, unthunk

from ._approx import array_report, close
from ._checks import (
    PrimalAndTangent,
    _check_count,
    _check_fixed,
    _check_pullback_fd,
    _check_thunked,
    _check_unmutated,
    _check_valid,
    _check_zero,
    _describe_ȳ,
    _fail,
    _fname,
    _header,
    _inputs,
    _labels,
    _leaf_value,
    _primal,
    _short,
    _snapshot,
    _split,
    primal_and_tangent,
)
from ._finite_differences import FiniteDifferenceMethod, central_fdm
from ._jvp import directional_derivative, precision
from ._rand_tangent import DEFAULT_SEED, rand_tangent
from ._to_vec import StructureMismatch, layout

__all__ = ["PrimalAndTangent", "primal_and_tangent", "test_frule", "test_rrule", "test_scalar"]

_DEFAULT_FDM = central_fdm(5, 1)


def test_rrule(
    f: Any,
    *args: Any,
    output_tangent: Any = None,
    fkwargs: dict | None = None,
    rtol: float = 1e-9,
    atol: float = 1e-9,
    check_thunked_output_tangent: bool = True,
    fdm: FiniteDifferenceMethod | None = None,
    seed: int = DEFAULT_SEED,
    max_coordinates: int = 32,
    n_directions: int = 3,
) -> None:
    """Check ``rrule(f, *args)`` against ``f`` and finite differences; raise on failure.

    Checks, each with its own message: a rule exists and returns ``(y,
    pullback)``; ``y`` equals ``f(*args)``; the rule does not mutate its
    arguments; the pullback returns ``1 + len(args)`` cotangents; arguments
    fixed as ``NoTangent()`` (see :func:`primal_and_tangent`) get a zero; each
    cotangent is a valid tangent of its primal (type, shape, dtype, real vs
    complex, ``ProjectTo`` fixed point); each equals the finite-difference
    ``J'ȳ`` for a random (or the given ``output_tangent``) ȳ; the pullback
    gives the same result for ``Thunk(ȳ)`` and zeros for ``ZeroTangent()``.
    Call it config-first, ``test_rrule(config, f, *args)``, for rules that
    need a ``RuleConfig``. See the module docstring for how large inputs are
    checked along random directions.

    >>> import math
    >>> from rulescore import rrule, NoTangent
    >>> def cube(x):
    ...     return x**3
    >>> @rrule.register(cube)
    ... def _(x: float):
    ...     def cube_pullback(ȳ):
    ...         return NoTangent(), ȳ * 3 * x**2
    ...     return cube(x), cube_pullback
    >>> test_rrule(cube, 2.0)

    See also: :func:`test_frule`, :func:`primal_and_tangent`, :func:`rulestest.rand_tangent`.
    """
    __tracebackhide__ = True
    config, f, primals, tangents = _split(f, args)
    fkwargs = dict(fkwargs or {})
    header = _header("test_rrule", config, f, args, fkwargs)
    rng = np.random.default_rng(seed)
    fdm = _DEFAULT_FDM if fdm is None else fdm
    fixed = [isinstance(unthunk(t), AbstractZero) for t in tangents]
    labels = _labels(len(primals))
    before = _snapshot(primals)

    res = (
        rrule(config, f, *primals, **fkwargs)
        if config is not None
        else rrule(f, *primals, **fkwargs)
    )
    if res is None:
        types = ", ".join(type(x).__name__ for x in primals)
        raise _fail(
            header,
            "exists",
            "",
            f"no rrule applies to {_fname(f)}({types}).\n"
            "  To fix: register one with @rrule.register(f) whose annotations accept these "
            "argument types.",
        )
    if not (isinstance(res, tuple) and len(res) == 2 and callable(res[1])):
        raise _fail(header, "form", "", f"the rrule must return (y, pullback), got {_short(res)}")
    y, pullback = res
    _check_unmutated(header, before, primals, "rrule")
    y_expected = _primal(header, f, before, fkwargs, y, rtol, atol)
    y_node = layout(y_expected)
    ȳ = rand_tangent(y_expected, rng) if output_tangent is None else output_tangent
    try:
        ȳ_vec = y_node.tangent_to_vec(ȳ, "output_tangent")
    except StructureMismatch as e:
        raise _fail(header, "structure", e.path, f"{e}") from None

    ȳ_before = _snapshot([ȳ])
    cots = pullback(ȳ)
    _check_count(header, cots, len(primals), "pullback(ȳ)")
    _check_unmutated(header, before, primals, "pullback")
    _check_fixed(header, cots, (f, *primals), [False, *fixed], labels)
    _check_valid(header, cots, (f, *primals), [False, *fixed], labels, "cotangent")

    inputs = _inputs(f, primals, fixed)
    try:
        x̄_vec = np.concatenate(
            [np.zeros(0)]
            + [c.tangent_to_vec(dx, lab) for c, dx, lab in zip(inputs.children, cots, labels)]
        )
    except StructureMismatch as e:
        raise _fail(header, "structure", e.path, f"{e}") from None
    _check_pullback_fd(
        header,
        f,
        fkwargs,
        inputs,
        y_node,
        ȳ_vec,
        x̄_vec,
        fdm,
        rng,
        rtol,
        atol,
        max_coordinates,
        n_directions,
        _describe_ȳ(ȳ),
    )

    _check_unmutated(header, ȳ_before, [ȳ], "pullback", "output tangent ȳ")
    if check_thunked_output_tangent:
        _check_thunked(header, pullback, ȳ, cots, labels, rtol, atol)
    _check_zero(header, pullback, (f, *primals), [False, *fixed], labels)


def test_frule(
    f: Any,
    *args: Any,
    fkwargs: dict | None = None,
    rtol: float = 1e-9,
    atol: float = 1e-9,
    fdm: FiniteDifferenceMethod | None = None,
    seed: int = DEFAULT_SEED,
) -> None:
    """Check ``frule((ḟ, *ẋs), f, *args)`` against ``f`` and finite differences.

    Checks: a rule exists and returns ``(y, ẏ)``; ``y`` equals ``f(*args)``;
    the rule does not mutate its arguments; ``ẏ`` is a valid tangent of ``y``;
    ``ẏ`` equals the finite-difference ``J·ẋ``. The tangents ẋ are random
    (:func:`rand_tangent`) unless fixed with :func:`primal_and_tangent`.

    >>> import math
    >>> from rulescore import frule
    >>> def cube(x):
    ...     return x**3
    >>> @frule.register(cube)
    ... def _(ḟ, ẋ, x: float):
    ...     return cube(x), 3 * x**2 * ẋ
    >>> test_frule(cube, 2.0)

    See also: :func:`test_rrule`, :func:`test_scalar`.
    """
    __tracebackhide__ = True
    config, f, primals, given = _split(f, args)
    fkwargs = dict(fkwargs or {})
    header = _header("test_frule", config, f, args, fkwargs)
    rng = np.random.default_rng(seed)
    fdm = _DEFAULT_FDM if fdm is None else fdm
    fixed = [isinstance(unthunk(t), AbstractZero) for t in given]
    ẋs = [rand_tangent(x, rng) if t is None else t for x, t in zip(primals, given)]
    ḟ = rand_tangent(f, rng) if layout(f).size else NoTangent()
    before = _snapshot(primals)

    if config is not None:
        res = frule(config, (ḟ, *ẋs), f, *primals, **fkwargs)
    else:
        res = frule((ḟ, *ẋs), f, *primals, **fkwargs)
    if res is None:
        types = ", ".join(type(x).__name__ for x in primals)
        raise _fail(
            header,
            "exists",
            "",
            f"no frule applies to {_fname(f)}({types}).\n"
            "  To fix: register one with @frule.register(f).",
        )
    if not (isinstance(res, tuple) and len(res) == 2):
        raise _fail(header, "form", "", f"the frule must return (y, ẏ), got {_short(res)}")
    y, ẏ = res
    _check_unmutated(header, before, primals, "frule")
    y_expected = _primal(header, f, before, fkwargs, y, rtol, atol)
    _check_valid(header, (ẏ,), (y_expected,), [False], ["output"], "output tangent ẏ")

    inputs = _inputs(f, primals, fixed)
    y_node = layout(y_expected)
    try:
        direction = np.concatenate(
            [np.zeros(0)]
            + [
                c.tangent_to_vec(t, lab)
                for c, t, lab in zip(inputs.children, (ḟ, *ẋs), _labels(len(primals)))
            ]
        )
        actual = y_node.tangent_to_vec(ẏ, "output")
    except StructureMismatch as e:
        raise _fail(header, "structure", e.path, str(e)) from None

    def call(g: Any, *xs: Any) -> Any:
        return g(*xs, **fkwargs)

    expected = directional_derivative(
        fdm,
        call,
        inputs,
        y_node,
        inputs.to_vec(inputs.primal),
        direction,
        precision(inputs, y_node),
    )
    for path, node, start in y_node.leaves("output"):
        a, e = actual[start : start + node.size], expected[start : start + node.size]
        if not close(a, e, rtol, atol):
            ẋ_text = ", ".join(
                f"{lab} ⊢ {_short(t)}" for lab, t in zip(_labels(len(primals))[1:], ẋs)
            )
            raise _fail(
                header,
                "fd",
                path,
                (
                    f"the tangent ẏ at {path} disagrees with finite differences (J·ẋ):\n"
                    + array_report(_leaf_value(node, a), _leaf_value(node, e), rtol, atol)
                    + f"\n  tangents: {ẋ_text}\n  (expected: finite differences; actual: the frule)"
                ),
            )


def _unit(x: Any, v: complex) -> Any:
    """The number ``v`` as a tangent of ``x`` (same type and dtype)."""
    if isinstance(x, (np.ndarray, np.generic)):
        dtype = np.float64 if x.dtype.kind in "iu" else x.dtype
        return np.asarray(v if np.iscomplexobj(x) else v.real, dtype=dtype)[()]
    return complex(v) if isinstance(x, complex) else float(v.real)


def test_scalar(
    f: Any,
    x: Any,
    *,
    fkwargs: dict | None = None,
    rtol: float = 1e-9,
    atol: float = 1e-9,
    fdm: FiniteDifferenceMethod | None = None,
) -> None:
    """Check the frule and rrule of a scalar function ``f`` at ``x``, real or complex.

    The frule is pushed along ``ẋ = 1`` (and ``ẋ = i`` for complex ``x``);
    the pullback is pulled along ``ȳ = 1`` (and ``ȳ = i`` for complex outputs),
    so every real partial derivative is checked.

    >>> from rulescore import scalar_rule
    >>> def sq(z):
    ...     return z * z
    >>> scalar_rule(sq, lambda z, Ω: 2 * z)
    >>> test_scalar(sq, 1.0 + 2.0j)

    See also: :func:`test_rrule`, :func:`test_frule`.
    """
    __tracebackhide__ = True
    kw = {"fkwargs": fkwargs, "rtol": rtol, "atol": atol, "fdm": fdm}
    for v in (1, 1j) if np.iscomplexobj(x) else (1,):
        test_frule(f, primal_and_tangent(x, _unit(x, v)), **kw)
    y = f(x, **(fkwargs or {}))
    for v in (1, 1j) if np.iscomplexobj(y) else (1,):
        test_rrule(f, x, output_tangent=_unit(y, v), **kw)


test_rrule.__test__ = False  # type: ignore[attr-defined]
test_frule.__test__ = False  # type: ignore[attr-defined]
test_scalar.__test__ = False  # type: ignore[attr-defined]
