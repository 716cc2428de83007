"""The individual checks behind ``test_rrule``/``test_frule``, each raising its own report.

Also the argument bookkeeping they share: ``primal_and_tangent`` markers, the
layout of ``(f, *args)`` with fixed arguments left out of finite differences,
and the paths (``f``, ``args[i]...``) used in messages. The finite-difference
comparison of a pullback is explained in :mod:`rulestest._testers`.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from rulescore import AbstractZero, RuleConfig, Thunk, ZeroTangent, unthunk

from ._approx import _compare, array_report, close
from ._finite_differences import FiniteDifferenceMethod
from ._jvp import directional_derivative, precision
from ._to_vec import Layout, _Array, _Complex, _Entries, _Opaque, layout
from ._validity import describe, tangent_problems
from .errors import RuleTestFailure


class PrimalAndTangent:
    """An argument together with the tangent the testers must use for it."""

    __slots__ = ("primal", "tangent")

    def __init__(self, primal: Any, tangent: Any) -> None:
        self.primal = primal
        self.tangent = tangent

    def __repr__(self) -> str:
        return f"primal_and_tangent({self.primal!r}, {self.tangent!r})"


def primal_and_tangent(x: Any, ẋ: Any) -> PrimalAndTangent:
    """Fix the tangent of an argument of ``test_rrule``/``test_frule`` (ChainRules' ``x ⊢ ẋ``).

    ``ẋ = NoTangent()`` marks the argument non-differentiable: the pullback
    must give it a zero cotangent and finite differences leave it alone. In
    ``test_frule`` any other ``ẋ`` is the tangent pushed forward.

    >>> from rulescore import NoTangent
    >>> primal_and_tangent(3, NoTangent())
    primal_and_tangent(3, NoTangent())
    """
    return PrimalAndTangent(x, ẋ)


def _fail(header: str, check: str, path: str, body: str) -> RuleTestFailure:
    return RuleTestFailure(f"{header}: {body}", check=check, path=path)


def _fname(f: Any) -> str:
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


def _short(x: Any) -> str:
    if isinstance(x, PrimalAndTangent):
        return f"{_short(x.primal)} ⊢ {x.tangent!r}"
    if isinstance(x, np.ndarray):
        return f"ndarray{x.shape}:{x.dtype}"
    text = repr(x)
    return text if len(text) <= 30 else type(x).__name__ + "(...)"


def _header(kind: str, config: Any, f: Any, args: tuple, fkwargs: dict) -> str:
    parts = ([type(config).__name__ + "()"] if config is not None else []) + [_fname(f)]
    parts += [_short(a) for a in args] + [f"{k}={v!r}" for k, v in fkwargs.items()]
    return f"{kind}({', '.join(parts)})"


def _split(f: Any, args: tuple) -> tuple[Any, Any, list, list]:
    config = None
    if isinstance(f, RuleConfig):
        if not args:
            raise TypeError("test_rrule(config, f, *args) needs the function after the config")
        config, f, args = f, args[0], args[1:]
    primals = [a.primal if isinstance(a, PrimalAndTangent) else a for a in args]
    tangents = [a.tangent if isinstance(a, PrimalAndTangent) else None for a in args]
    return config, f, primals, tangents


def _labels(n: int) -> list[str]:
    return ["f", *(f"args[{i}]" for i in range(n))]


def _inputs(f: Any, primals: list, fixed: list[bool]) -> _Entries:
    """The layout of ``(f, *args)``, with arguments fixed as non-differentiable left opaque."""
    values = (f, *primals)
    children = [layout(f)] + [_Opaque(x) if skip else layout(x) for x, skip in zip(primals, fixed)]
    return _Entries(values, "positional", list(range(len(values))), children)


def _leaves(inputs: _Entries) -> list[tuple[str, Layout, int]]:
    out: list[tuple[str, Layout, int]] = []
    start = 0
    for label, child in zip(_labels(len(inputs.children) - 1), inputs.children):
        out.extend(child.leaves(label, start))
        start += child.size
    return out


def _leaf_value(node: Layout, v: np.ndarray) -> Any:
    """Coordinates of one leaf as a float64/complex128 value of the leaf's shape."""
    if isinstance(node, _Array):
        return v.view(np.complex128).reshape(node.shape) if node.complex else v.reshape(node.shape)
    if isinstance(node, _Complex):
        return complex(v[0], v[1])
    return float(v[0])


def _primal(
    header: str, f: Any, primals: list, fkwargs: dict, got: Any, rtol: float, atol: float
) -> None:
    __tracebackhide__ = True
    expected = f(*_snapshot(primals), **fkwargs)
    try:
        _compare(got, expected, rtol, atol, "primal output")
    except RuleTestFailure as e:
        raise _fail(
            header,
            "primal",
            "output",
            f"the rule's primal output differs from f(*args):\n{e}\n"
            "  To fix: the rule must return f(*args) itself as its first result.",
        ) from None
    return expected


def _call_pullback(header: str, pullback: Any, ȳ: Any, text: str) -> Any:
    __tracebackhide__ = True
    try:
        return pullback(ȳ)
    except Exception as e:
        raise _fail(
            header,
            "zero" if "Zero" in text else "thunk",
            "",
            (
                f"pullback({text}) raised {type(e).__name__}: {e}\n"
                "  A pullback may receive a ZeroTangent() or a Thunk as ȳ. To fix: start the "
                "pullback with ȳ = unthunk(ȳ), and return zeros when isinstance(ȳ, AbstractZero) "
                "(or use operations the zero tangents support: *, @, +, .conj())."
            ),
        ) from e


def _describe_ȳ(ȳ: Any) -> str:
    text = repr(unthunk(ȳ))
    return text if len(text) <= 80 else describe(ȳ)


def _snapshot(values: list) -> list:
    """Deep copies of ``values``; a value that cannot be copied is kept as it is."""
    out = []
    for v in values:
        try:
            out.append(copy.deepcopy(v))
        except Exception:
            out.append(v)  # then the mutation check compares it with itself
    return out


def _check_unmutated(header: str, before: list, after: list, who: str, what: str = "input") -> None:
    __tracebackhide__ = True
    for i, (b, a) in enumerate(zip(before, after)):
        name = f"args[{i}]" if what == "input" else what
        try:
            _compare(a, b, 0.0, 0.0, name)
        except RuleTestFailure as err:
            raise _fail(
                header,
                "mutation",
                name,
                f"the {who} mutated its {what}:\n{err}\n"
                "  To fix: copy before writing into an argument.",
            ) from None


def _check_thunked(
    header: str, pullback: Any, ȳ: Any, cots: tuple, labels: list, rtol: float, atol: float
) -> None:
    """``pullback(Thunk(() -> ȳ))`` must work and agree with ``pullback(ȳ)``."""
    __tracebackhide__ = True
    thunked = _call_pullback(header, pullback, Thunk(lambda: ȳ), "Thunk(() -> ȳ)")
    _check_count(header, thunked, len(labels) - 1, "pullback(Thunk(ȳ))")
    for lab, a, e in zip(labels, thunked, cots):
        try:
            _compare(a, e, rtol, atol, lab)
        except RuleTestFailure as err:
            raise _fail(
                header,
                "thunk",
                lab,
                f"pullback(Thunk(() -> ȳ)) differs from pullback(ȳ):\n{err}\n"
                "  To fix: unthunk(ȳ) before using it.",
            ) from None


def _check_zero(header: str, pullback: Any, primals: tuple, fixed: list, labels: list) -> None:
    """``pullback(ZeroTangent())`` must work and give valid, zero cotangents."""
    __tracebackhide__ = True
    zeros = _call_pullback(header, pullback, ZeroTangent(), "ZeroTangent()")
    _check_count(header, zeros, len(labels) - 1, "pullback(ZeroTangent())")
    _check_valid(header, zeros, primals, fixed, labels, "cotangent from pullback(ZeroTangent())")
    for lab, z in zip(labels, zeros):
        try:
            _compare(z, ZeroTangent(), 0.0, 0.0, lab)
        except RuleTestFailure as err:
            raise _fail(
                header, "zero", lab, f"pullback(ZeroTangent()) gave a non-zero cotangent:\n{err}"
            ) from None


def _check_count(header: str, cots: Any, n: int, call: str) -> None:
    __tracebackhide__ = True
    if not isinstance(cots, tuple) or len(cots) != n + 1:
        got = f"{len(cots)} cotangents" if isinstance(cots, tuple) else f"a {type(cots).__name__}"
        raise _fail(
            header,
            "count",
            "",
            f"{call} returned {got}; expected a tuple of {n + 1}: one for "
            f"f itself (usually NoTangent()) and one per positional argument ({n}).",
        )


def _check_fixed(header: str, cots: tuple, primals: tuple, fixed: list, labels: list) -> None:
    __tracebackhide__ = True
    for lab, dx, x, skip in zip(labels, cots, primals, fixed):
        if lab == "f" and layout(x).size == 0:
            skip = True
        if skip and not isinstance(unthunk(dx), AbstractZero):
            why = "is fixed as NoTangent()" if lab != "f" else "has no differentiable fields"
            raise _fail(
                header,
                "notangent",
                lab,
                f"{lab} {why}, so its cotangent must be "
                f"NoTangent() (or ZeroTangent()); got {describe(dx)}: {_short(unthunk(dx))}",
            )


def _check_valid(
    header: str, cots: Any, primals: tuple, fixed: list, labels: list, what: str
) -> None:
    __tracebackhide__ = True
    for lab, dx, x, skip in zip(labels, cots, primals, fixed):
        if skip:
            continue
        problems = tangent_problems(x, dx, lab)
        if problems:
            path = problems[0].split(":", 1)[0]
            raise _fail(header, "valid", path, f"invalid {what}: " + "\n".join(problems))


def _check_pullback_fd(
    header: str,
    f: Any,
    fkwargs: dict,
    inputs: _Entries,
    y_node: Layout,
    ȳ_vec: np.ndarray,
    x̄_vec: np.ndarray,
    fdm: FiniteDifferenceMethod,
    rng: np.random.Generator,
    rtol: float,
    atol: float,
    max_coordinates: int,
    n_directions: int,
    ȳ_text: str,
) -> None:
    __tracebackhide__ = True

    def call(g: Any, *xs: Any) -> Any:
        return g(*xs, **fkwargs)

    x_vec = inputs.to_vec(inputs.primal)
    eps = precision(inputs, y_node)
    n = inputs.size

    def along(direction: np.ndarray) -> float:
        return float(
            ȳ_vec @ directional_derivative(fdm, call, inputs, y_node, x_vec, direction, eps)
        )

    for path, node, start in _leaves(inputs):
        stop = start + node.size
        actual = x̄_vec[start:stop]
        if node.size <= max_coordinates:
            expected = np.empty(node.size)
            for i in range(node.size):
                e = np.zeros(n)
                e[start + i] = 1.0
                expected[i] = along(e)
            if not close(actual, expected, rtol, atol):
                raise _fail(
                    header,
                    "fd",
                    path,
                    (
                        f"the cotangent for {path} disagrees with finite differences (J'ȳ):\n"
                        + array_report(
                            _leaf_value(node, actual), _leaf_value(node, expected), rtol, atol
                        )
                        + f"\n  primal {path}: {describe(node.primal)}; output tangent ȳ = {ȳ_text}"
                        "\n  (expected: finite differences; actual: the pullback)"
                    ),
                )
            continue
        for k in range(n_directions):
            # Entries of size ~1, not a unit vector: each coordinate must move by about
            # the step h, or rounding x + h·ẋ (in float32 above all) swamps the change.
            d = rng.standard_normal(node.size)
            # The typical size of <x̄, ẋ> is ‖x̄‖‖ẋ‖/√n; finite-difference noise is a
            # small multiple of it, so the tolerance is relative to that size too.
            scale = float(np.linalg.norm(actual) * np.linalg.norm(d)) / np.sqrt(node.size)
            direction = np.zeros(n)
            direction[start:stop] = d
            e_dot, a_dot = along(direction), float(actual @ d)
            err = abs(a_dot - e_dot)
            if err > max(atol, rtol * max(abs(a_dot), abs(e_dot), scale)):
                rel = err / abs(e_dot) if e_dot else float("inf")
                body = (
                    f"the cotangent x̄ for {path} disagrees with finite differences along "
                    f"random direction #{k + 1} ẋ ~ N(0, I) ({path} has {node.size} coordinates, so it "
                    f"is checked along {n_directions} random directions):\n"
                    f"  expected <ȳ, J·ẋ> = {e_dot!r}  (finite differences)\n"
                    f"  actual   <x̄, ẋ>   = {a_dot!r}  (pullback)\n"
                    f"  abs error {err:.3g}; relative error {rel:.3g}; "
                    f"rtol={rtol:g}, atol={atol:g}\n"
                    f"  primal {path}: {describe(node.primal)}; output tangent ȳ: {ȳ_text}"
                )
                raise _fail(header, "fd", path, body)
