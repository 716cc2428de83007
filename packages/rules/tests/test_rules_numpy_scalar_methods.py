"""Rules of numpy scalars' methods (``_numpy_scalar_methods``): the array method's rule
run on the scalar as a 0-d array, checked by finite differences for every method the
module registered (a method that gains an ``ndarray`` rule is tested here with no
arguments unless ``CALLS`` says otherwise)."""

from __future__ import annotations

import numpy as np
import pytest
from rules_testing import TOLERANCES, N

import rules  # noqa: F401  (registers the rules)
from rules._numpy_scalar_methods import SCALAR_METHODS
from rulescore import NoTangent, ZeroTangent, frule, rrule
from rulestest import test_frule, test_rrule

NO = NoTangent()
SCALARS = {
    np.float64: np.float64(0.3),
    np.float32: np.float32(-0.6),
    np.complex128: np.complex128(0.4 - 0.7j),
}

#: name -> the calls (positional arguments after the scalar, keywords) checked; a
#: method not listed is called with no arguments.
CALLS: dict[str, list] = {
    "clip": [((-0.5, 0.5), {}), ((0.5, 1.0), {}), ((-1.0, -0.2), {})],
    "compress": [((N([True]),), {})],
    "cumsum": [((), {}), ((N(0),), {})],
    "cumprod": [((), {}), ((N(None),), {})],
    "max": [((), {}), ((), {"keepdims": True})],
    "mean": [((), {}), ((), {"keepdims": True})],
    "repeat": [((N(3),), {})],
    "reshape": [((N(()),), {}), ((N(1),), {}), ((N((1, 1)),), {}), ((N(-1),), {})],
    "round": [((), {}), ((N(1),), {})],
    "sum": [((), {}), ((), {"keepdims": True}), ((N(None),), {})],
    "take": [((N(0),), {}), ((N([0, 0]),), {})],
    "transpose": [((), {}), ((N(()),), {})],
}
#: Methods numpy refuses on a scalar (a 0-d array has no second axis): the rule
#: raises numpy's own error.
REFUSED = {"diagonal": (), "trace": (), "swapaxes": (N(0), N(1))}
#: Methods of real numbers only (order or rounding): complex inputs are not checked.
REAL_ONLY = {"clip", "max", "min", "round"}
#: The index of ``choose`` is the scalar, an integer: the choices carry the derivative.
SPECIAL = {"choose"}


def _cases() -> list:
    out = []
    for name in SCALAR_METHODS:
        if name in REFUSED or name in SPECIAL:
            continue
        for cls in SCALARS:
            if cls is np.complex128 and name in REAL_ONLY:
                continue
            for i, (args, kw) in enumerate(CALLS.get(name, [((), {})])):
                out.append(pytest.param(name, cls, args, kw, id=f"{name}-{cls.__name__}-{i}"))
    return out


def _primal(a):
    return getattr(a, "primal", a)


@pytest.mark.parametrize(("name", "cls", "args", "kw"), _cases())
def test_scalar_method_by_finite_differences(name, cls, args, kw):
    f, x = getattr(np.generic, name), SCALARS[cls]
    test_rrule(f, x, *args, fkwargs=kw, **TOLERANCES[cls])
    test_frule(f, x, *args, fkwargs=kw, **TOLERANCES[cls])


@pytest.mark.parametrize(("name", "cls", "args", "kw"), _cases())
def test_scalar_method_returns_numpy_types(name, cls, args, kw):
    """The value is what numpy returns (a scalar for a 0-d result); the scalar's
    cotangent has the scalar's type, and a scalar output's tangent the output's."""
    f, x = getattr(np.generic, name), SCALARS[cls]
    plain = [_primal(a) for a in args]
    want = f(x, *plain, **kw)
    y, pb = rrule(f, x, *plain, **kw)
    assert type(y) is type(want)
    np.testing.assert_array_equal(y, want)
    ȳ = np.ones_like(y) if isinstance(y, np.ndarray) else (y * 0 + 1 if y is not None else 1.0)
    if isinstance(y, list):
        ȳ = [1.0] * len(y)
    cts = pb(ȳ)
    assert len(cts) == 2 + len(args)
    assert type(cts[1]) is cls or isinstance(cts[1], ZeroTangent)
    _, ẏ = frule((NO, cls(1), *(NO for _ in args)), f, x, *plain, **kw)
    if isinstance(y, np.generic):
        assert type(ẏ) is type(y) or isinstance(ẏ, ZeroTangent)


def test_every_registered_method_is_checked():
    """The list the module registered is the one these tests run over."""
    assert "clip" in SCALAR_METHODS and "sum" in SCALAR_METHODS
    assert "item" not in SCALAR_METHODS and "astype" not in SCALAR_METHODS  # their own rules
    untested = set(SCALAR_METHODS) - {c.values[0] for c in _cases()} - set(REFUSED) - SPECIAL
    assert not untested


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_by_numpy_refused_by_the_rule(name):
    x, args = np.float64(0.3), tuple(_primal(a) for a in REFUSED[name])
    with pytest.raises(Exception) as numpy_error:
        getattr(x, name)(*args)
    with pytest.raises(type(numpy_error.value)):
        rrule(getattr(np.generic, name), x, *args)
    with pytest.raises(type(numpy_error.value)):
        frule((NO, 1.0, *(NO for _ in args)), getattr(np.generic, name), x, *args)


@pytest.mark.parametrize("cls", [np.float64, np.float32])
def test_choose_by_finite_differences(cls):
    choices = np.array([1.5, -2.5], dtype=cls)
    test_rrule(np.generic.choose, N(np.int64(1)), choices, **TOLERANCES[cls])
    test_frule(np.generic.choose, N(np.int64(1)), choices, **TOLERANCES[cls])
    _, pb = rrule(np.generic.choose, np.int64(1), choices)
    np.testing.assert_array_equal(pb(cls(2.0))[2], np.array([0.0, 2.0], dtype=cls))


def test_hand_derived_values():
    """clip passes the cotangent inside the bounds and to the bound outside; prod,
    mean and conj of one number are the identity (conj conjugates)."""
    _, pb = rrule(np.generic.clip, np.float64(0.2), -1.0, 1.0)
    assert pb(3.0) == (NO, 3.0, 0.0, 0.0)
    _, pb = rrule(np.generic.clip, np.float32(2.0), -1.0, 1.0)
    d = pb(np.float32(3.0))
    assert (d[1], d[3]) == (0.0, 3.0) and type(d[1]) is np.float32
    assert rrule(np.generic.prod, np.float64(0.7))[1](2.0)[1] == 2.0
    assert rrule(np.generic.mean, np.float32(0.7))[1](2.0)[1] == np.float32(2.0)
    assert rrule(np.generic.conjugate, np.complex128(1 + 2j))[1](1j)[1] == -1j
    assert frule((NO, 1j), np.generic.conj, np.complex64(1 + 2j))[1] == np.complex64(-1j)


def test_integer_scalar_gets_a_float_cotangent():
    y, pb = rrule(np.generic.sum, np.int64(3))
    assert type(y) is np.int64
    assert type(pb(1.0)[1]) is np.float64


def test_zero_cotangent_and_tangent():
    _, pb = rrule(np.generic.reshape, np.float64(0.3), ())
    assert pb(ZeroTangent())[1] == ZeroTangent()
    assert isinstance(frule((NO, ZeroTangent()), np.generic.sum, np.float64(0.3))[1], ZeroTangent)


@pytest.mark.parametrize("name", ["argmax", "argsort", "nonzero", "all", "tobytes"])
def test_non_differentiable_array_methods_stay_non_differentiable(name):
    f = getattr(np.generic, name)
    rs = rrule.table.rules_for(f)
    assert rs and all(r.impl.__name__.startswith("nondiff_rrule_") for r in rs)
