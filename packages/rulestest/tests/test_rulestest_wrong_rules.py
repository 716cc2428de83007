"""Deliberately wrong rules: each must be rejected with the right message.

Every case defines a primal function and a wrong rule for it, then names the
tester call and a regular expression the failure report must match.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from rulescore import AbstractZero, NoTangent, ProjectTo, Tangent, Thunk, frule, rrule, unthunk
from rulestest import RuleTestFailure, primal_and_tangent, test_frule, test_rrule


def _rrule(f, impl):
    """Register ``impl(*args) -> (y, pullback)`` as the rrule of ``f`` (any argument types)."""
    rrule.register_signature(f, impl, None)
    return f


def _frule(f, impl):
    frule.register_signature(f, impl, None)
    return f


def w_sign(x):
    return np.sin(x)


def w_factor(x):
    return x * x


def w_swapped(x, y):
    return x * y


def w_shape(x):
    return 2.0 * x


def w_dtype(x):
    return 2.0 * x


def w_conj(z):
    return (1.0 + 2.0j) * z


def w_unbroadcast(x, y):
    return x + y


def w_count(x, y):
    return x * y


def w_primal(x):
    return np.exp(x)


def w_complex_for_real(x):
    return 3.0 * x


def w_fixed(x, n):
    return x**n


def w_thunk(x):
    return 2.0 * x


def w_zero(x):
    return np.sum(x * x)


def w_mutate(x):
    return 2.0 * x


def w_big(X):
    return X @ X


def w_big_slightly(X):
    return np.sin(X)


def w_df(x):
    return 2.0 * x


def w_0d(x):
    return 2.0 * x


@dataclass
class Point:
    x: float
    y: np.ndarray


def w_dataclass(p):
    return p.x * np.sum(p.y)


def w_dataclass_dict(p):
    return p.x * np.sum(p.y)


def w_dict(d):
    return d["a"] * d["b"]


def w_tuple_out(x):
    return np.sin(x), np.cos(x)


def w_no_rule(x):
    return x


def w_python_float(x):
    return 2.0 * x


def w_thunk_differs(x):
    return 2.0 * x


def w_mutates_ȳ(x):
    return 2.0 * x


def w_form(x):
    return 2.0 * x


def _mutates_ȳ_rule(x):
    def w_mutates_ȳ_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return NoTangent(), ȳ
        ȳ *= 2.0  # the bug: scales the caller's cotangent in place
        return NoTangent(), ȳ

    return 2.0 * x, w_mutates_ȳ_pullback


_rrule(w_sign, lambda x: (w_sign(x), lambda ȳ: (NoTangent(), -ȳ * np.cos(x))))
_rrule(w_factor, lambda x: (w_factor(x), lambda ȳ: (NoTangent(), ȳ * x)))
_rrule(w_swapped, lambda x, y: (w_swapped(x, y), lambda ȳ: (NoTangent(), ȳ * x, ȳ * y)))
_rrule(w_shape, lambda x: (w_shape(x), lambda ȳ: (NoTangent(), 2.0 * unthunk(ȳ).ravel())))
_rrule(w_dtype, lambda x: (w_dtype(x), lambda ȳ: (NoTangent(), np.asarray(2.0 * ȳ, np.float64))))
_rrule(w_conj, lambda z: (w_conj(z), lambda ȳ: (NoTangent(), ȳ * (1.0 + 2.0j))))
_rrule(
    w_unbroadcast,
    lambda x, y: (w_unbroadcast(x, y), lambda ȳ: (NoTangent(), unthunk(ȳ), unthunk(ȳ))),
)
_rrule(w_count, lambda x, y: (w_count(x, y), lambda ȳ: (NoTangent(), ȳ * y)))
_rrule(w_primal, lambda x: (w_primal(x) + 1e-3, lambda ȳ: (NoTangent(), ȳ * np.exp(x))))
_rrule(w_complex_for_real, lambda x: (3.0 * x, lambda ȳ: (NoTangent(), ȳ * (3.0 + 0.5j))))
_rrule(
    w_fixed,
    lambda x, n: (x**n, lambda ȳ: (NoTangent(), ȳ * n * x ** (n - 1), ȳ * np.log(x) * x**n)),
)
_rrule(
    w_thunk,
    lambda x: (2.0 * x, lambda ȳ: (NoTangent(), ProjectTo(x)(2.0 * ȳ.reshape(np.shape(x))))),
)
_rrule(w_zero, lambda x: (w_zero(x), lambda ȳ: (NoTangent(), np.asarray(2.0 * ȳ * x, x.dtype))))


def _mutating_rule(x):
    y = 2.0 * x
    x *= 1.5  # the bug: writes into the caller's array

    def w_mutate_pullback(ȳ):
        return NoTangent(), 2.0 * ȳ

    return y, w_mutate_pullback


_rrule(w_mutate, _mutating_rule)
_rrule(w_big, lambda X: (X @ X, lambda ȳ: (NoTangent(), ȳ @ X.T + X @ ȳ)))
_rrule(
    w_big_slightly,
    lambda X: (np.sin(X), lambda ȳ: (NoTangent(), 1.0001 * unthunk(ȳ) * np.cos(X))),
)
_rrule(w_df, lambda x: (2.0 * x, lambda ȳ: (1.0, 2.0 * ȳ)))
_rrule(w_0d, lambda x: (2.0 * x, lambda ȳ: (NoTangent(), np.float64(2.0 * ȳ))))
_rrule(
    w_dataclass,
    lambda p: (
        w_dataclass(p),
        lambda ȳ: (NoTangent(), Tangent[Point](x=ȳ * np.sum(p.y), y=-ȳ * p.x * np.ones(3))),
    ),
)
_rrule(
    w_dataclass_dict,
    lambda p: (
        w_dataclass_dict(p),
        lambda ȳ: (NoTangent(), {"x": ȳ * np.sum(p.y), "y": ȳ * p.x * np.ones(3)}),
    ),
)
_rrule(
    w_dict,
    lambda d: (w_dict(d), lambda ȳ: (NoTangent(), {"a": ȳ * d["b"], "b": ȳ * d["b"]})),
)


def _tuple_out_rule(x):
    def w_tuple_out_pullback(ȳ):
        ȳ1, ȳ2 = unthunk(ȳ)
        return NoTangent(), ȳ1 * np.cos(x) + ȳ2 * np.sin(x)  # sign of the second term

    return w_tuple_out(x), w_tuple_out_pullback


_rrule(w_tuple_out, _tuple_out_rule)
_rrule(
    w_thunk_differs,
    lambda x: (2.0 * x, lambda ȳ: (NoTangent(), (1.0 if isinstance(ȳ, Thunk) else 2.0) * ȳ)),
)
_rrule(w_mutates_ȳ, _mutates_ȳ_rule)
_rrule(w_form, lambda x: 2.0 * x)
_rrule(w_python_float, lambda x: (2.0 * x, lambda ȳ: (NoTangent(), np.float32(2.0 * ȳ))))

# frules
_frule(w_sign, lambda ḟ, ẋ, x: (np.sin(x), 2.0 * ẋ * np.cos(x)))
_frule(w_dtype, lambda ḟ, ẋ, x: (w_dtype(x), np.asarray(2.0 * ẋ, np.float64)))
_frule(w_primal, lambda ḟ, ẋ, x: (w_primal(x) * 2, ẋ * np.exp(x)))
_frule(w_tuple_out, lambda ḟ, ẋ, x: (w_tuple_out(x), (ẋ * np.cos(x), ẋ * np.sin(x))))
_frule(w_swapped, lambda ḟ, ẋ, ẏ, x, y: (x * y, ẋ * x + ẏ * y))
_frule(w_shape, lambda ḟ, ẋ, x: (w_shape(x), 2.0 * np.broadcast_to(ẋ, (2, *np.shape(x)))))

rng = np.random.default_rng(1)
v3 = rng.standard_normal(3)
m23 = rng.standard_normal((2, 3))
big = rng.standard_normal((60, 60))

FD = "disagrees with finite differences"
ONE = {"output_tangent": 1.0}
DTYPE = r"dtype float64 for a primal of dtype float32"

RRULE_CASES = [
    ("wrong sign", w_sign, (0.7,), {}, rf"args\[0\] {FD}"),
    ("wrong sign, array", w_sign, (v3,), {}, rf"args\[0\] {FD}(.|\n)*max abs error"),
    ("wrong factor", w_factor, (1.3,), ONE, rf"{FD}(.|\n)*expected: 2\.6"),
    ("swapped arguments", w_swapped, (2.0, 3.0), ONE, rf"args\[0\] {FD}(.|\n)*actual:   2\.0"),
    ("wrong shape", w_shape, (m23,), {}, r"args\[0\]: the tangent has shape \(6,\)"),
    ("wrong dtype", w_dtype, (v3.astype(np.float32),), {}, DTYPE),
    ("missing conjugate", w_conj, (0.5 - 1.5j,), {}, rf"args\[0\] {FD}"),
    ("forgotten unbroadcast", w_unbroadcast, (v3, m23), {},
     r"args\[0\](.|\n)*forgotten unbroadcast"),
    ("wrong number of cotangents", w_count, (2.0, 3.0), {},
     r"returned 2 cotangents; expected a tuple of 3"),
    ("primal mismatch", w_primal, (0.4,), {}, r"primal output differs from f\(\*args\)"),
    ("complex cotangent for real input", w_complex_for_real, (0.4,), {}, r"complex tangent"),
    ("fixed argument gets a cotangent", w_fixed, (1.5, primal_and_tangent(3, NoTangent())), {},
     r"args\[1\] is fixed as NoTangent\(\)"),
    ("thunked ȳ unsupported", w_thunk, (v3,), {},
     r"pullback\(Thunk\(\(\) -> ȳ\)\) raised AttributeError"),
    ("zero ȳ unsupported", w_zero, (v3,), {}, r"from pullback\(ZeroTangent\(\)\)"),
    ("mutates its input", w_mutate, (v3.copy(),), {}, r"the rrule mutated its input"),
    ("large input, wrong rule", w_big, (big,), {}, r"along random direction #1"),
    ("large input, 1e-4 relative error", w_big_slightly, (big,), {}, r"along random direction"),
    ("cotangent for f itself", w_df, (1.0,), {}, r"f has no differentiable fields"),
    ("numpy scalar for a 0-d array", w_0d, (np.array(1.5),), {}, r"must be an ndarray"),
    ("dataclass field wrong", w_dataclass, (Point(1.5, v3),), {}, rf"args\[0\]\.y {FD}"),
    ("dataclass cotangent not a Tangent", w_dataclass_dict, (Point(1.5, v3),), {},
     r"must be a Tangent\[Point\], got dict"),
    ("dict entry wrong", w_dict, ({"a": 1.5, "b": 2.5},), {}, rf"args\[0\]\['b'\] {FD}"),
    ("tuple output, wrong sign", w_tuple_out, (0.3,), {}, rf"args\[0\] {FD}"),
    ("no rule", w_no_rule, (1.0,), {}, r"no rrule applies to w_no_rule\(float\)"),
    ("numpy float32 for a Python float", w_python_float, (1.0,), {}, r"must be a Python float"),
    ("thunked ȳ gives another answer", w_thunk_differs, (1.0,), {},
     r"pullback\(Thunk\(\(\) -> ȳ\)\) differs from pullback\(ȳ\)"),
    ("mutates ȳ", w_mutates_ȳ, (v3,), {}, r"the pullback mutated its output tangent ȳ"),
    ("not (y, pullback)", w_form, (1.0,), {}, r"must return \(y, pullback\), got 2\.0"),
]  # fmt: skip


@pytest.mark.parametrize(("f", "args", "kw", "match"), [c[1:] for c in RRULE_CASES],
                         ids=[c[0] for c in RRULE_CASES])  # fmt: skip
def test_wrong_rrule_is_rejected(f, args, kw, match):
    with pytest.raises(RuleTestFailure, match=match):
        test_rrule(f, *args, **kw)


FRULE_CASES = [
    ("wrong factor", w_sign, (0.7,), rf"output {FD} \(J·ẋ\)"),
    ("wrong dtype", w_dtype, (v3.astype(np.float32),), DTYPE),
    ("primal mismatch", w_primal, (0.4,), r"primal output differs"),
    ("tuple output, wrong sign", w_tuple_out, (0.3,), rf"output\[1\] {FD}"),
    ("swapped arguments", w_swapped, (2.0, 3.0), rf"output {FD}"),
    ("wrong shape", w_shape, (v3,), r"output: the tangent has shape \(2, 3\)"),
    ("given tangent", w_sign, (primal_and_tangent(0.7, 1.0),), r"expected: 0\.76"),
    ("no rule", w_no_rule, (1.0,), r"no frule applies"),
]  # fmt: skip


@pytest.mark.parametrize(("f", "args", "match"), [c[1:] for c in FRULE_CASES],
                         ids=[c[0] for c in FRULE_CASES])  # fmt: skip
def test_wrong_frule_is_rejected(f, args, match):
    with pytest.raises(RuleTestFailure, match=match):
        test_frule(f, *args)


def test_wrong_output_tangent_structure_is_reported():
    with pytest.raises(RuleTestFailure, match=r"output_tangent: shape \(2,\)"):
        test_rrule(w_factor, v3, output_tangent=np.ones(2))


def test_failure_records_check_and_path():
    with pytest.raises(RuleTestFailure) as info:
        test_rrule(w_dict, {"a": 1.5, "b": 2.5})
    assert (info.value.check, info.value.path) == ("fd", "args[0]['b']")
    assert isinstance(info.value, AssertionError)
