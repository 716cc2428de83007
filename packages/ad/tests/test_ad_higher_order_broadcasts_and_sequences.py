"""Higher-order derivatives through broadcasting operators and through sequences
that numpy reads as arrays (issue 20, found by autograd's and tangent's suites).

**Broadcasting.** Forward mode's tangent of ``x + y`` with only ``x`` perturbed is
``ẋ`` broadcast to the output's shape. Reverse mode over forward mode
differentiates that pushforward (for ``+``, ``-``, ``*``... the one-line kernels
of ``ad.higher.pushforward_kernels``); the kernels of ``+`` and ``-`` returned
``ẋ`` itself, so the cotangent of the tangent reached ``ẋ`` unsummed: an array
for a float ``v`` (silently wrong), or a projection error. Checked here for the
elementwise operators, operator and ufunc spellings, floats and arrays of
different ranks, in each mode combination where a tangent is differentiated
again, against central differences of first derivatives and hand-derived values.

**Sequences.** ``np.sum([1.0, a, 2.0])`` and ``np.array((x, x))``: forward mode
hands the numpy function's ``frule`` the list's tangent as an array. At third
order (reverse over forward over forward) the rule's body is pushed forward, and
the tangents of those tangents were left as ``Tangent[tuple]``: numpy received
one (``TypeError``) or a projection did (``CotangentError``). They are converted
the same way now, inside the kernel reverse mode follows.
"""

import itertools
import math

import numpy as np
import pytest
from ad_testing import D_f, D_r, fd_gradient

import ad

MODES = {"f": D_f, "r": D_r}
TRIPLES = ["".join(p) for p in itertools.product("fr", repeat=3)]

# --- broadcasting: reverse over forward (the fault), and the other combinations -------

OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "**": lambda a, b: a**b,
    "np.add": lambda a, b: np.add(a, b),
    "np.subtract": lambda a, b: np.subtract(a, b),
    "np.multiply": lambda a, b: np.multiply(a, b),
    "np.divide": lambda a, b: np.divide(a, b),
    "np.power": lambda a, b: np.power(a, b),
    "sin(a + b)": lambda a, b: np.sin(a + b),
    "-(a - b)": lambda a, b: -(a - b),
    "exp(b - a)": lambda a, b: np.exp(b - a),
    "tanh(a + b)": lambda a, b: np.tanh(a + b),
    "sum(a + b)": lambda a, b: np.sum(a + b),
    "2.0 + a + b": lambda a, b: 2.0 + a + b,
}

SHAPES = [((), (4,)), ((4,), ()), ((4,), (3, 4)), ((3, 1), (1, 4)), ((1,), (4,)), ((), (3, 4))]


def _value(rng, shape):
    return float(rng.uniform(0.5, 1.5)) if shape == () else rng.uniform(0.5, 1.5, size=shape)


def _fd_dir(f, args, dirs, h=1e-6):
    up = [a + h * d for a, d in zip(args, dirs)]
    down = [a - h * d for a, d in zip(args, dirs)]
    return (f(*up) - f(*down)) / (2 * h)


def _close(got, want):
    if got is None:  # ad.gradient: no gradient flows
        got = np.zeros(np.shape(want)) if np.ndim(want) else 0.0
    assert np.shape(got) == np.shape(want), (np.shape(got), np.shape(want))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _problem(op, shapes, active, seed):
    """``(inner, xs, W)``: the operation as a function of its active operands."""
    rng = np.random.default_rng(seed)
    a, b = (_value(rng, s) for s in shapes)
    W = rng.uniform(0.5, 1.5, size=np.shape(op(a, b)))
    inner = {"a": lambda a_: op(a_, b), "b": lambda b_: op(a, b_), "ab": op}[active]
    xs = {"a": (a,), "b": (b,), "ab": (a, b)}[active]
    return inner, xs, W, rng


CASES = [
    pytest.param(name, shapes, active, id=f"{name}-{shapes[0]}x{shapes[1]}-{active}")
    for name in OPS
    for shapes in SHAPES
    for active in ("a", "b", "ab")
]


@pytest.mark.parametrize("name, shapes, active", CASES)
def test_reverse_over_forward_sums_the_tangent_cotangent_over_broadcast_axes(name, shapes, active):
    inner, xs, W, rng = _problem(OPS[name], shapes, active, 0)
    n = len(xs)
    vs = tuple(_value(rng, np.shape(x)) for x in xs)

    def loss(*xv):
        return np.sum(W * ad.jvp(inner, xv[:n], xv[n:])[1])

    got = ad.gradient(loss, *xs, *vs)
    for g, w in zip(got, fd_gradient(loss, *xs, *vs)):
        _close(g, w)


@pytest.mark.parametrize("name, shapes, active", CASES[::3])
def test_forward_over_forward_of_a_broadcast(name, shapes, active):
    inner, xs, W, rng = _problem(OPS[name], shapes, active, 1)
    n = len(xs)
    vs = tuple(_value(rng, np.shape(x)) for x in xs)

    def loss(*xv):
        return np.sum(W * ad.jvp(inner, xv[:n], xv[n:])[1])

    dirs = tuple(_value(rng, np.shape(x)) for x in (*xs, *vs))
    _close(ad.jvp(loss, (*xs, *vs), dirs)[1], _fd_dir(loss, (*xs, *vs), dirs))


@pytest.mark.parametrize("name, shapes, active", CASES[1::3])
def test_forward_and_reverse_over_reverse_of_a_broadcast(name, shapes, active):
    inner, xs, W, rng = _problem(OPS[name], shapes, active, 2)
    us = tuple(_value(rng, np.shape(x)) for x in xs)

    def gdot(*x):
        g = ad.gradient(lambda *y: np.sum(W * inner(*y)), *x)
        return sum(0.0 if gi is None else np.sum(gi * u) for gi, u in zip(g, us))

    dirs = tuple(_value(rng, np.shape(x)) for x in xs)
    _close(ad.jvp(gdot, xs, dirs)[1], _fd_dir(gdot, xs, dirs))
    for g, w in zip(ad.gradient(gdot, *xs), fd_gradient(gdot, *xs)):
        _close(g, w)


def test_the_reported_programs_hand_derived():
    y = np.array([1.0, 2.0, 3.0, 4.0])

    def loss(x, v):  # = v * (0 + 1 + 2 + 3)
        return np.sum(ad.jvp(lambda x: x + y, (x,), (v,))[1] * np.arange(4.0))

    assert ad.gradient(loss, 2.0, 1.0)[1] == 6.0
    assert ad.gradient(lambda x, v: -loss(x, v), 2.0, 1.0)[1] == -6.0
    Y = np.ones((3, 4))

    def loss2(x, v):  # = 3 * sum(v)
        return np.sum(ad.jvp(lambda x: x + Y, (x,), (v,))[1])

    got = ad.gradient(loss2, np.ones(4), np.ones(4))[1]
    assert got.shape == (4,) and got.tolist() == [3.0, 3.0, 3.0, 3.0]

    def loss3(x, v):  # (3, 1) against (1, 4): the tangent is summed over axis 1
        return np.sum(ad.jvp(lambda x: np.ones((1, 4)) - x, (x,), (v,))[1])

    got = ad.gradient(loss3, np.ones((3, 1)), np.ones((3, 1)))[1]
    assert got.shape == (3, 1) and got.tolist() == [[-4.0]] * 3


def test_float32_operands_keep_their_dtype():
    Y = np.arange(4.0, dtype=np.float32)

    def loss(x, v):
        return np.sum(ad.jvp(lambda x: x + Y, (x,), (v,))[1] * np.arange(4.0, dtype=np.float32))

    got = ad.gradient(loss, np.ones(4, np.float32), np.ones(4, np.float32))[1]
    assert got.dtype == np.float32 and got.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert ad.gradient(loss, 2.0, 1.0)[1] == 6.0


@pytest.mark.parametrize("modes", TRIPLES)
@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("array", [False, True], ids=["float-x", "array-x"])
def test_third_order_through_a_broadcast_hand_derived(modes, sign, array):
    # f(x) = sum(W * (Y + s x)^3) with x broadcast against Y: along u, the third
    # directional derivative is 6 s^3 sum(W * u^3) (u broadcast as x is)
    rng = np.random.default_rng(3)
    Y, W = rng.uniform(0.5, 1.5, (3, 4)), rng.uniform(0.5, 1.5, (3, 4))
    x, u = (rng.uniform(0.5, 1.5, 4), rng.uniform(0.5, 1.5, 4)) if array else (0.7, 1.0)
    A, B, C = (MODES[m] for m in modes)

    def f(z):
        return np.sum(W * (Y + sign * z) ** 3)

    got = A(lambda y: B(lambda z: C(f, z, u), y, u), x, u)
    assert got == pytest.approx(6 * sign**3 * np.sum(W * np.broadcast_to(u, Y.shape) ** 3))


# --- sequences numpy reads as arrays, at third and fourth order ---------------------------

X = 0.7
SEQUENCES = {
    # name: (f, f''' at X)
    "np.sum of a list": (lambda a: np.sum([1.0, a * a * a, 2.0]), 6.0),
    "np.array of a tuple": (lambda x: np.sum(np.sin(np.array((x, x)))), -2 * math.cos(X)),
    "np.prod of a list": (lambda x: np.prod([x, x * x, 2.0]), 12.0),
    "np.dot of two lists": (lambda x: np.dot([x, 2.0], [x * x, x]), 6.0),
    "det of nested lists": (lambda x: np.linalg.det(np.array([[x, 1.0], [2.0, x**3]])), 24 * X),
    "np.mean of a tuple": (lambda x: np.mean((x, x**3)), 3.0),
    "np.add of lists": (lambda x: np.sum(np.add([x, 1.0], [2.0, x**3])), 6.0),
    "np.exp of a list": (lambda x: np.sum(np.exp([x, 2 * x])), math.exp(X) + 8 * math.exp(2 * X)),
    "list of arrays": (lambda x: np.sum(np.array([x * np.ones(2), np.ones(2)]) ** 3), 12.0),
    "np.stack of a list": (
        lambda x: np.sum(np.stack([x * np.ones(2), x**2 * np.ones(2)]) ** 2),
        48 * X,
    ),
    "np.asarray of a list": (lambda x: np.sum(np.asarray([x, x * x]) ** 2), 24 * X),
    "np.max of a list": (lambda x: np.max([x**3, 0.1]), 6.0),
}


def _fd3(f, x, h=1e-2):
    return (f(x + 2 * h) - 2 * f(x + h) + 2 * f(x - h) - f(x - 2 * h)) / (2 * h**3)


@pytest.mark.parametrize("modes", TRIPLES)
@pytest.mark.parametrize("name", list(SEQUENCES))
def test_third_order_of_a_sequence_numpy_reads_as_an_array(name, modes):
    f, third = SEQUENCES[name]
    A, B, C = (MODES[m] for m in modes)
    got = A(lambda y: B(lambda z: C(f, z), y), X)
    assert got == pytest.approx(third, rel=1e-9, abs=1e-9)
    assert got == pytest.approx(_fd3(f, X), rel=1e-3, abs=1e-3)


def test_the_reported_sequence_programs():
    def f(a):
        b = [1.0, a * a * a, 2.0]
        return np.sum(b)

    assert ad.grad(ad.grad(ad.grad(f)))(X) == pytest.approx(6.0)
    assert ad.jvp(lambda y: ad.hessian(f, y), (X,), (1.0,))[1] == pytest.approx(6.0)

    def g(x):
        return ad.gradient(lambda x: np.sum(np.sin(np.array((x, x)))), x)[0]

    def h(x, v):
        return ad.jvp(g, (x,), (v,))[1]

    assert ad.jvp(h, (X, 1.0), (1.0, 0.0))[1] == pytest.approx(-2 * math.cos(X))


def _nested(modes, f):
    """The derivative of ``f`` by one level per letter of ``modes`` (outer first)."""
    if not modes:
        return f
    inner = _nested(modes[1:], f)
    D = MODES[modes[0]]
    return lambda y: D(inner, y)


@pytest.mark.parametrize("modes", ["".join(p) for p in itertools.product("fr", repeat=4)])
def test_fourth_order_of_a_list_numpy_reads(modes):
    def f(x):  # e^x + e^{2x} + x^4: f'''' = e^x + 16 e^{2x} + 24
        return np.sum(np.exp([x, 2 * x])) + np.sum([x**4, 1.0])

    assert _nested(modes, f)(X) == pytest.approx(math.exp(X) + 16 * math.exp(2 * X) + 24)
