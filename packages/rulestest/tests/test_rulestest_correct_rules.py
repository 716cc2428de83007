"""Correct rules that ``test_rrule``/``test_frule``/``test_scalar`` must accept.

The rules are defined here (not taken from the ``rules`` package) so that the
tester is tested on its own: scalars, arrays, float32, complex, broadcasting,
dataclass, dict and namedtuple arguments, tuple outputs, keyword arguments,
non-differentiable arguments and a config-first rule calling ``rrule_via_ad``.
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
import pytest

from rulescore import (
    AbstractZero,
    HasForwardsMode,
    HasReverseMode,
    NoTangent,
    ProjectTo,
    RuleConfig,
    Tangent,
    Thunk,
    ZeroTangent,
    frule,
    frule_via_ad,
    rrule,
    rrule_via_ad,
    scalar_rule,
    unthunk,
)
from rulestest import primal_and_tangent, test_frule, test_rrule, test_scalar


def unbroadcast(x, dx):
    """Sum ``dx`` over the axes along which ``x`` was broadcast, then project."""
    if isinstance(dx, AbstractZero):
        return dx
    dx = np.asarray(dx)
    extra = dx.ndim - np.ndim(x)
    dx = dx.sum(axis=tuple(range(extra))) if extra else dx
    axes = tuple(i for i, n in enumerate(np.shape(x)) if n == 1 and dx.shape[i] != 1)
    return ProjectTo(x)(dx.sum(axis=axes, keepdims=True) if axes else dx)


# --- elementwise sin: every shape and dtype -------------------------------------


def c_sin(x):
    return np.sin(x)


@rrule.register(c_sin)
def _(x):
    def c_sin_pullback(ȳ):
        return NoTangent(), ProjectTo(x)(unthunk(ȳ) * np.conj(np.cos(x)))

    return c_sin(x), c_sin_pullback


@frule.register(c_sin)
def _(ḟ, ẋ, x):
    return c_sin(x), ProjectTo(c_sin(x))(ẋ * np.cos(x))


rng = np.random.default_rng(7)

SIN_INPUTS = [
    ("python float", 0.3, 1e-9),
    ("numpy float64 scalar", np.float64(0.3), 1e-9),
    ("0-d array", np.array(0.3), 1e-9),
    ("vector", rng.standard_normal(4), 1e-9),
    ("matrix", rng.standard_normal((3, 2)), 1e-9),
    ("float32 vector", rng.standard_normal(4).astype(np.float32), 1e-3),
    ("complex vector", rng.standard_normal(3) + 1j * rng.standard_normal(3), 1e-9),
    ("complex64 vector", (rng.standard_normal(3) + 1j).astype(np.complex64), 1e-3),
    ("empty", np.zeros((0, 3)), 1e-9),
]


@pytest.mark.parametrize(("x", "tol"), [c[1:] for c in SIN_INPUTS], ids=[c[0] for c in SIN_INPUTS])
def test_elementwise_rule_passes(x, tol):
    test_rrule(c_sin, x, rtol=tol, atol=tol)
    test_frule(c_sin, x, rtol=tol, atol=tol)


# --- broadcasting multiply --------------------------------------------------------


def c_mul(x, y):
    return np.multiply(x, y)


@rrule.register(c_mul)
def _(x, y):
    def c_mul_pullback(ȳ):
        ȳ = unthunk(ȳ)
        return NoTangent(), unbroadcast(x, ȳ * np.conj(y)), unbroadcast(y, ȳ * np.conj(x))

    return c_mul(x, y), c_mul_pullback


@frule.register(c_mul)
def _(ḟ, ẋ, ẏ, x, y):
    return c_mul(x, y), ẋ * y + x * ẏ


MUL_INPUTS = [
    ("scalars", 2.0, 3.0),
    ("vector and scalar", rng.standard_normal(3), 1.5),
    ("row and matrix", rng.standard_normal((1, 3)), rng.standard_normal((2, 3))),
    ("vector and matrix", rng.standard_normal(3), rng.standard_normal((2, 3))),
    ("complex and real", rng.standard_normal(2) + 1j, rng.standard_normal(2)),
    ("int scalar (perturbed as a real)", 3, 2.5),
]


@pytest.mark.parametrize(("x", "y"), [c[1:] for c in MUL_INPUTS], ids=[c[0] for c in MUL_INPUTS])
def test_broadcasting_rule_passes(x, y):
    test_rrule(c_mul, x, y)
    test_frule(c_mul, x, y)


# --- structured arguments -----------------------------------------------------------


@dataclass
class Affine:
    w: np.ndarray
    b: float
    name: str = "layer"


def c_affine(layer, x):
    return layer.w @ x + layer.b


@rrule.register(c_affine)
def _(layer: Affine, x):
    def c_affine_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return NoTangent(), ȳ, ȳ
        dlayer = Tangent[Affine](w=np.outer(ȳ, x), b=float(np.sum(ȳ)))
        return NoTangent(), dlayer, ProjectTo(x)(layer.w.T @ ȳ)

    return c_affine(layer, x), c_affine_pullback


@frule.register(c_affine)
def _(ḟ, dlayer, ẋ, layer: Affine, x):
    return c_affine(layer, x), dlayer.w @ x + dlayer.b + layer.w @ ẋ


def test_dataclass_argument():
    layer = Affine(rng.standard_normal((2, 3)), 0.5)
    test_rrule(c_affine, layer, rng.standard_normal(3))
    test_frule(c_affine, layer, rng.standard_normal(3))


def c_weighted(d):
    return d["scale"] * np.sum(d["values"] ** 2)


@rrule.register(c_weighted)
def _(d: dict):
    def c_weighted_pullback(ȳ):
        ȳ = unthunk(ȳ)
        values = d["values"]
        return NoTangent(), {
            "scale": float(ȳ * np.sum(values**2)),
            "values": ProjectTo(values)(2 * ȳ * d["scale"] * values),
            "label": NoTangent(),
        }

    return c_weighted(d), c_weighted_pullback


@frule.register(c_weighted)
def _(ḟ, ḋ, d: dict):
    v = d["values"]
    return c_weighted(d), ḋ["scale"] * np.sum(v**2) + d["scale"] * np.sum(2 * v * ḋ["values"])


def test_dict_argument():
    d = {"scale": 1.5, "values": rng.standard_normal(3), "label": "x"}
    test_rrule(c_weighted, d)
    test_frule(c_weighted, d)


Polar = namedtuple("Polar", "r theta")


def c_to_xy(p):
    return np.array([p.r * math.cos(p.theta), p.r * math.sin(p.theta)])


@rrule.register(c_to_xy)
def _(p: Polar):
    def c_to_xy_pullback(ȳ):
        ȳ = unthunk(ȳ)
        c, s = math.cos(p.theta), math.sin(p.theta)
        dr = float(ȳ[0] * c + ȳ[1] * s)
        dθ = float(p.r * (-ȳ[0] * s + ȳ[1] * c))
        return NoTangent(), Tangent[Polar](r=dr, theta=dθ)

    return c_to_xy(p), c_to_xy_pullback


def test_namedtuple_argument():
    test_rrule(c_to_xy, Polar(2.0, 0.4))


# --- tuple output, zeros in the output cotangent -----------------------------------


def c_sincos(x):
    return np.sin(x), np.cos(x)


@rrule.register(c_sincos)
def _(x):
    def c_sincos_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return NoTangent(), ȳ
        ȳ1, ȳ2 = ȳ
        return NoTangent(), ProjectTo(x)(ȳ1 * np.cos(x) - ȳ2 * np.sin(x))

    return c_sincos(x), c_sincos_pullback


@frule.register(c_sincos)
def _(ḟ, ẋ, x):
    return c_sincos(x), (ẋ * np.cos(x), -ẋ * np.sin(x))


@pytest.mark.parametrize("x", [0.4, rng.standard_normal(3)], ids=["scalar", "vector"])
def test_tuple_output(x):
    test_rrule(c_sincos, x)
    test_frule(c_sincos, x)
    test_rrule(c_sincos, x, output_tangent=(ZeroTangent(), c_sincos(x)[1] * 0 + 1.0))


# --- keyword arguments and non-differentiable arguments -------------------------------


def c_power_sum(x, *, p=2):
    return np.sum(x**p)


@rrule.register(c_power_sum)
def _(x: np.ndarray, *, p=2):
    def c_power_sum_pullback(ȳ):
        return NoTangent(), ProjectTo(x)(unthunk(ȳ) * p * x ** (p - 1))

    return c_power_sum(x, p=p), c_power_sum_pullback


@frule.register(c_power_sum)
def _(ḟ, ẋ, x: np.ndarray, *, p=2):
    return c_power_sum(x, p=p), np.sum(p * x ** (p - 1) * ẋ)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_keyword_argument(p):
    x = rng.standard_normal(4)
    test_rrule(c_power_sum, x, fkwargs={"p": p})
    test_frule(c_power_sum, x, fkwargs={"p": p})


def c_pow_int(x, n):
    return x**n


@rrule.register(c_pow_int)
def _(x: float, n: int):
    def c_pow_int_pullback(ȳ):
        return NoTangent(), ȳ * n * x ** (n - 1), NoTangent()

    return c_pow_int(x, n), c_pow_int_pullback


@frule.register(c_pow_int)
def _(ḟ, ẋ, ṅ, x: float, n: int):
    return c_pow_int(x, n), ẋ * n * x ** (n - 1)


def test_argument_fixed_as_no_tangent():
    test_rrule(c_pow_int, 1.7, primal_and_tangent(3, NoTangent()))
    test_frule(c_pow_int, 1.7, primal_and_tangent(3, NoTangent()))


def c_repeat(x, label, flag):
    return x * 2.0 if flag else x


@rrule.register(c_repeat)
def _(x, label: str, flag: bool):
    def c_repeat_pullback(ȳ):
        return NoTangent(), ȳ * (2.0 if flag else 1.0), NoTangent(), NoTangent()

    return c_repeat(x, label, flag), c_repeat_pullback


def test_strings_and_bools_get_no_tangent_automatically():
    test_rrule(c_repeat, 1.5, "name", True)


# --- complex -------------------------------------------------------------------------


def c_abs2(z):
    return (z * np.conj(z)).real


@rrule.register(c_abs2)
def _(z):
    def c_abs2_pullback(ȳ):
        return NoTangent(), ProjectTo(z)(2 * unthunk(ȳ) * z)

    return c_abs2(z), c_abs2_pullback


@frule.register(c_abs2)
def _(ḟ, ż, z):
    return c_abs2(z), ProjectTo(c_abs2(z))(2 * (np.conj(z) * ż).real)


@pytest.mark.parametrize("z", [1.0 - 2.0j, np.array([1 + 1j, -0.5j])], ids=["scalar", "array"])
def test_complex_to_real_rule(z):
    test_rrule(c_abs2, z)
    test_frule(c_abs2, z)


def c_cube(z):
    return z * z * z


scalar_rule(c_cube, lambda z, Ω: 3 * z * z)


@pytest.mark.parametrize("x", [0.7, -1.2, 0.5 + 1.5j], ids=["real", "negative", "complex"])
def test_scalar_real_and_complex(x):
    test_scalar(c_cube, x)


# --- config-first rules --------------------------------------------------------------


class ToyAD(RuleConfig, HasReverseMode, HasForwardsMode):
    """A stand-in AD whose 'differentiation' is looking up registered rules."""

    def rrule_via_ad(self, f, *args, **kwargs):
        res = rrule(self, f, *args, **kwargs)
        assert res is not None, f"ToyAD cannot differentiate {f}"
        return res

    def frule_via_ad(self, tangents, f, *args, **kwargs):
        return frule(self, tangents, f, *args, **kwargs)


def c_apply_twice(g, x):
    return g(g(x))


@rrule.register(c_apply_twice, config=HasReverseMode)
def _(config, g, x):
    y1, pb1 = rrule_via_ad(config, g, x)
    y2, pb2 = rrule_via_ad(config, g, y1)

    def c_apply_twice_pullback(ȳ):
        dg2, dy1 = pb2(ȳ)
        dg1, dx = pb1(dy1)
        return NoTangent(), dg1 + dg2, dx

    return y2, c_apply_twice_pullback


@frule.register(c_apply_twice, config=HasForwardsMode)
def _(config, ḟ, ġ, ẋ, g, x):
    y1, ẏ1 = frule_via_ad(config, (ġ, ẋ), g, x)
    return frule_via_ad(config, (ġ, ẏ1), g, y1)


@pytest.mark.parametrize("x", [0.3, rng.standard_normal(3)], ids=["scalar", "vector"])
def test_config_first_rule_using_rrule_via_ad(x):
    test_rrule(ToyAD(), c_apply_twice, c_sin, x)
    test_frule(ToyAD(), c_apply_twice, c_sin, x)


# --- callable structs, thunked cotangents, integer outputs -------------------------------


@dataclass
class Scale:
    """A callable struct: its field is differentiated like an argument (path ``f.a``)."""

    a: float

    def __call__(self, x):
        return self.a * x


@rrule.register(Scale.__call__)
def _(self: Scale, x):
    def scale_call_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return NoTangent(), ȳ, ȳ
        return NoTangent(), Tangent[Scale](a=float(np.sum(ȳ * x))), ProjectTo(x)(self.a * ȳ)

    return self(x), scale_call_pullback


def c_call(s, x):
    return s(x)


@rrule.register(c_call)
def _(s: Scale, x):
    y, pb = rrule(Scale.__call__, s, x)

    def c_call_pullback(ȳ):
        _, ds, dx = pb(ȳ)
        return NoTangent(), ds, dx

    return y, c_call_pullback


def test_callable_struct_argument():
    test_rrule(c_call, Scale(1.5), rng.standard_normal(3))
    test_rrule(Scale.__call__, Scale(1.5), 2.0)


def c_lazy(x):
    return np.exp(x)


@rrule.register(c_lazy)
def _(x):
    y = c_lazy(x)

    def c_lazy_pullback(ȳ):
        if isinstance(unthunk(ȳ), AbstractZero):
            # rulescore's ProjectTo cannot yet project a thunk that evaluates to a zero.
            return NoTangent(), ȳ
        return NoTangent(), ProjectTo(x)(Thunk(lambda: unthunk(ȳ) * y))

    return y, c_lazy_pullback


def test_thunked_cotangents_are_accepted():
    test_rrule(c_lazy, rng.standard_normal(3))


def c_argmax(x):
    return int(np.argmax(x))


@rrule.register(c_argmax)
def _(x):
    def c_argmax_pullback(ȳ):
        return NoTangent(), ZeroTangent()

    return c_argmax(x), c_argmax_pullback


def test_integer_output():
    test_rrule(c_argmax, np.array([1.0, 3.0, 2.0]))


def test_output_tangent_as_tangent_tuple():
    test_rrule(c_sincos, 0.4, output_tangent=Tangent[tuple](1.0, ZeroTangent()))
