"""Spellings of the scalar workloads (``pow_loop``, ``math_expr``) for ``variants.py``.

Each spelling computes the same function as its workload in ``workloads.py`` and is
checked against the same hand-written gradient; see ``variants.Variant`` for the fields.
"""

from __future__ import annotations

import functools
import math
import types
from dataclasses import dataclass

import numpy as np
import workloads as wl
from variants import Variant, attrs, baseline, baseline_prepare, first, keys, np_scalars

# pow_loop: params (x,), data (n,).


def pow_aug(x, n):
    r = 1.0
    for _ in range(n):
        r *= x
    return r


def mul(a, b):
    return a * b


def pow_helper(x, n):
    r = 1.0
    for _ in range(n):
        r = mul(r, x)
    return r


def pow_while(x, n):
    r = 1.0
    i = 0
    while i < n:
        r = r * x
        i += 1
    return r


def make_pow(n):
    def power(x):
        r = 1.0
        for _ in range(n):
            r = r * x
        return r

    return power


POW_LOOP = (
    baseline("pow_loop", "lambda x: f(x, n)"),
    Variant("pow_loop", "f, n positional", lambda p, d: (wl.pow_loop, (*p, *d)), leaves=first(1)),
    Variant("pow_loop", "r *= x", lambda p, d: (lambda x: pow_aug(x, *d), p)),
    Variant("pow_loop", "mul(r, x) helper", lambda p, d: (lambda x: pow_helper(x, *d), p)),
    Variant("pow_loop", "while loop", lambda p, d: (lambda x: pow_while(x, *d), p)),
    Variant("pow_loop", "closure", lambda p, d: (make_pow(*d), p)),
    Variant(
        "pow_loop",
        "functools.partial",
        lambda p, d: (functools.partial(wl.pow_loop, n=d[0]), p),
    ),
    Variant("pow_loop", "lambda *p", lambda p, d: (lambda *q: wl.pow_loop(*q, *d), p)),
    Variant("pow_loop", "np.float64 x", baseline_prepare("pow_loop"), inputs=np_scalars),
)

# math_expr: params (x, y, z), no data.


def math_expr_np(x, y, z):
    a = np.sin(x) * np.cos(y) + np.exp(-z * z)
    b = np.log(1.0 + x * x) / (1.0 + np.sqrt(y * y + 1.0))
    c = np.tanh(a - b) ** 2 + a * b
    d = np.arctan(x * y - z) * np.cosh(0.1 * c)
    e = (a + b + c + d) / (2.0 + np.sin(z) ** 2)
    return e * np.exp(-0.5 * x) + d - c / 3.0


# The hand-written gradient with numpy's functions in place of math's (the same code).
_NP_MATH = types.SimpleNamespace(
    sin=np.sin,
    cos=np.cos,
    exp=np.exp,
    log=np.log,
    sqrt=np.sqrt,
    tanh=np.tanh,
    atan=np.arctan,
    cosh=np.cosh,
    sinh=np.sinh,
)
math_expr_np_grad = types.FunctionType(
    wl.math_expr_grad.__code__, {**vars(wl), "math": _NP_MATH}, "math_expr_np_grad"
)


def math_expr_temps(x, y, z):
    sx = math.sin(x)
    cy = math.cos(y)
    zz = z * z
    ez = math.exp(-zz)
    a = sx * cy + ez
    xx = x * x
    lx = math.log(1.0 + xx)
    q = math.sqrt(y * y + 1.0)
    b = lx / (1.0 + q)
    t = math.tanh(a - b)
    c = t**2 + a * b
    u = x * y - z
    d = math.atan(u) * math.cosh(0.1 * c)
    sz = math.sin(z)
    den = 2.0 + sz**2
    e = (a + b + c + d) / den
    return e * math.exp(-0.5 * x) + d - c / 3.0


def math_expr_aug(x, y, z):
    a = math.sin(x) * math.cos(y)
    a += math.exp(-z * z)
    b = math.log(1.0 + x * x)
    b /= 1.0 + math.sqrt(y * y + 1.0)
    c = math.tanh(a - b) ** 2
    c += a * b
    d = math.atan(x * y - z)
    d *= math.cosh(0.1 * c)
    e = a + b
    e += c
    e += d
    e /= 2.0 + math.sin(z) ** 2
    r = e * math.exp(-0.5 * x)
    r += d
    r -= c / 3.0
    return r


def part_a(x, y, z):
    return math.sin(x) * math.cos(y) + math.exp(-z * z)


def part_b(x, y):
    return math.log(1.0 + x * x) / (1.0 + math.sqrt(y * y + 1.0))


def part_cd(a, b, x, y, z):
    c = math.tanh(a - b) ** 2 + a * b
    return c, math.atan(x * y - z) * math.cosh(0.1 * c)


def math_expr_helpers(x, y, z):
    a = part_a(x, y, z)
    b = part_b(x, y)
    c, d = part_cd(a, b, x, y, z)
    e = (a + b + c + d) / (2.0 + math.sin(z) ** 2)
    return e * math.exp(-0.5 * x) + d - c / 3.0


@dataclass
class XYZ:
    x: float
    y: float
    z: float


MATH_EXPR = (
    baseline("math_expr", "f direct"),
    Variant("math_expr", "lambda *p", lambda p, d: (lambda *q: wl.math_expr(*q), p)),
    Variant(
        "math_expr",
        "np.sin/np.exp on floats",
        lambda p, d: (math_expr_np, p),
        hand=math_expr_np_grad,
    ),
    Variant("math_expr", "np.float64 inputs", baseline_prepare("math_expr"), inputs=np_scalars),
    Variant("math_expr", "three helpers", lambda p, d: (math_expr_helpers, p)),
    Variant("math_expr", "temporaries", lambda p, d: (math_expr_temps, p)),
    Variant("math_expr", "augmented assignment", lambda p, d: (math_expr_aug, p)),
    Variant(
        "math_expr",
        "tuple params",
        lambda p, d: (lambda q: wl.math_expr(*q), (tuple(p),)),
        leaves=lambda g: g[0],
    ),
    Variant(
        "math_expr",
        "dict params",
        lambda p, d: (
            lambda q: wl.math_expr(q["x"], q["y"], q["z"]),
            (dict(zip("xyz", p)),),
        ),
        leaves=keys("x", "y", "z"),
    ),
    Variant(
        "math_expr",
        "dataclass params",
        lambda p, d: (lambda q: wl.math_expr(q.x, q.y, q.z), (XYZ(*p),)),
        leaves=attrs("x", "y", "z"),
    ),
)

VARIANTS = POW_LOOP + MATH_EXPR


# Scalar patterns for the µs-per-operation table, each a loop of one operation.


def dict_loop(p, n):
    r = 1.0
    for _ in range(n):
        r = r * p["x"]
    return r


def dict_loop_grad(p, n):
    r, dr = 1.0, 0.0
    for _ in range(n):
        x = p["x"]
        r, dr = r * x, dr * x + r
    return ({"x": dr},)


def append_loop(x, n):
    ys = []
    for _ in range(n):
        ys.append(x)
    return ys[0] * ys[-1]


def index_loop(xs):
    s = 0.0
    for i in range(len(xs)):
        s = s + xs[i]
    return s


def op_patterns(small: bool):
    """Rows ``(label, fn, args, n_ops, expected gradient, leaves, hand)`` where ``hand``
    is a hand-written gradient call or None (then only the forward pass compares)."""
    n = 50 if small else 1000
    x = 1.0005
    dpow = n * x ** (n - 1)
    xs = [0.001 * i for i in range(n)]
    short = xs[: n // 10]
    return (
        (
            "r = r * x",
            lambda v: wl.pow_loop(v, n),
            (x,),
            n,
            (dpow,),
            tuple,
            lambda: wl.pow_loop_grad(x, n),
        ),
        (
            "r *= x",
            lambda v: pow_aug(v, n),
            (x,),
            n,
            (dpow,),
            tuple,
            lambda: wl.pow_loop_grad(x, n),
        ),
        (
            "r = r * x, x np.float64",
            lambda v: wl.pow_loop(v, n),
            (np.float64(x),),
            n,
            (dpow,),
            tuple,
            lambda: wl.pow_loop_grad(np.float64(x), n),
        ),
        (
            "r = mul(r, x), user helper",
            lambda v: pow_helper(v, n),
            (x,),
            n,
            (dpow,),
            tuple,
            lambda: wl.pow_loop_grad(x, n),
        ),
        (
            "r = r * p['x'] (read + mul)",
            lambda p: dict_loop(p, n),
            ({"x": x},),
            2 * n,
            (dpow,),
            keys("x"),
            lambda: dict_loop_grad({"x": x}, n),
        ),
        ("ys.append(x)", lambda v: append_loop(v, n), (x,), n, (2 * x,), tuple, None),
        (
            f"s = s + xs[i], {len(short)} items",
            index_loop,
            (short,),
            2 * len(short),
            (np.ones(len(short)),),
            lambda g: (np.asarray(g[0]),),
            None,
        ),
        (
            f"s = s + xs[i], {n} items",
            index_loop,
            (xs,),
            2 * n,
            (np.ones(n),),
            lambda g: (np.asarray(g[0]),),
            None,
        ),
    )
