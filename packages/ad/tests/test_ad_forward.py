"""Forward mode (``ad.jvp``, ``ad.pushforward``): against finite differences and
against reverse mode (``<ȳ, J·ẋ> == <Jᵀ·ȳ, ẋ>`` for random ȳ)."""

import dataclasses
import functools
import math
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
import pytest

import ad
from rulescore import Tangent, ZeroTangent, frule, frule_via_ad

RNG = np.random.default_rng(0)


# --- checking machinery ---------------------------------------------------------


def _axpy(x, h, ṫ):
    """x + h·ṫ on any structure (None: not perturbed)."""
    if ṫ is None:
        return x
    if isinstance(x, dict):
        return {k: _axpy(v, h, ṫ.get(k)) for k, v in x.items()}
    if hasattr(x, "_fields"):
        return type(x)(*(_axpy(a, h, getattr(ṫ, n)) for a, n in zip(x, x._fields)))
    if isinstance(x, (tuple, list)):
        return type(x)(_axpy(a, h, b) for a, b in zip(x, ṫ))
    if dataclasses.is_dataclass(x):
        return dataclasses.replace(
            x,
            **{
                f.name: _axpy(getattr(x, f.name), h, getattr(ṫ, f.name))
                for f in dataclasses.fields(x)
            },
        )
    return x + h * np.asarray(ṫ) if isinstance(x, np.ndarray) else x + h * ṫ


def _diff(a, b, h):
    """(a - b) / 2h on any output structure."""
    if isinstance(a, dict):
        return {k: _diff(a[k], b[k], h) for k in a}
    if dataclasses.is_dataclass(a):
        return {
            f.name: _diff(getattr(a, f.name), getattr(b, f.name), h) for f in dataclasses.fields(a)
        }
    if isinstance(a, (tuple, list)):
        return [_diff(x, y, h) for x, y in zip(a, b)]
    return (np.asarray(a) - np.asarray(b)) / (2 * h)


def _as_plain(ẏ, y):
    """The tangent as nested lists/dicts/arrays, to compare with finite differences."""
    if isinstance(ẏ, Tangent):
        return {k: _as_plain(getattr(ẏ, k), getattr(y, k)) for k in type(ẏ)._allowed or ()}
    if isinstance(ẏ, ZeroTangent):
        return np.zeros(np.shape(y))
    if dataclasses.is_dataclass(ẏ):
        return {
            f.name: _as_plain(getattr(ẏ, f.name), getattr(y, f.name)) for f in dataclasses.fields(ẏ)
        }
    if isinstance(ẏ, dict):
        return {k: _as_plain(ẏ[k], y[k]) for k in ẏ}
    if isinstance(ẏ, (tuple, list)):
        return [_as_plain(a, b) for a, b in zip(ẏ, y)]
    return np.asarray(ẏ)


def _close(got, want, rtol, atol, path="ẏ"):
    if isinstance(want, dict):
        for k in want:
            _close(got[k], want[k], rtol, atol, f"{path}[{k!r}]")
    elif isinstance(want, list):
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            _close(g, w, rtol, atol, f"{path}[{i}]")
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=path)


def check_fd(f, args, tangents, rtol=1e-5, atol=1e-7, h=1e-6):
    """jvp agrees with the central difference of f along the tangents."""
    y, ẏ = ad.jvp(f, args, tangents)
    want_y = f(*args)
    plus = f(*[_axpy(x, h, ṫ) for x, ṫ in zip(args, tangents)])
    minus = f(*[_axpy(x, -h, ṫ) for x, ṫ in zip(args, tangents)])
    _close(_as_plain(y, y), _as_plain(want_y, want_y), 1e-12, 1e-12, "y")
    _close(_as_plain(ẏ, y), _diff(plus, minus, h), rtol, atol)
    return y, ẏ


def _inner(a, b):
    """Re <a, b> on any structure; None is zero."""
    if a is None or b is None or isinstance(a, ZeroTangent) or isinstance(b, ZeroTangent):
        return 0.0
    if isinstance(a, Tangent) or dataclasses.is_dataclass(a) or hasattr(a, "_fields"):
        names = (
            type(a)._allowed
            if isinstance(a, Tangent)
            else (a._fields if hasattr(a, "_fields") else [f.name for f in dataclasses.fields(a)])
        )
        return sum(_inner(getattr(a, n), getattr(b, n)) for n in names)
    if isinstance(a, dict):
        return sum(_inner(v, b.get(k) if isinstance(b, dict) else b[k]) for k, v in a.items())
    if isinstance(a, (tuple, list)):
        return sum(_inner(x, y) for x, y in zip(a, b))
    return float(np.real(np.vdot(np.asarray(a), np.asarray(b))))


def _rand_like(y):
    if isinstance(y, dict):
        return {k: _rand_like(v) for k, v in y.items()}
    if dataclasses.is_dataclass(y):
        return Tangent[type(y)](
            **{f.name: _rand_like(getattr(y, f.name)) for f in dataclasses.fields(y)}
        )
    if isinstance(y, (tuple, list)):
        return (
            type(y)(_rand_like(v) for v in y)
            if not hasattr(y, "_fields")
            else tuple(_rand_like(v) for v in y)
        )
    if isinstance(y, complex) or (isinstance(y, np.ndarray) and y.dtype.kind == "c"):
        shape = np.shape(y)
        z = RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)
        return complex(z) if shape == () and not isinstance(y, np.ndarray) else z
    if isinstance(y, np.ndarray):
        return RNG.standard_normal(y.shape)
    return float(RNG.standard_normal())


def check_reverse(f, args, tangents, rtol=1e-7):
    """<ȳ, J ẋ> == <Jᵀ ȳ, ẋ> for a random ȳ."""
    y, ẏ = ad.jvp(f, args, tangents)
    ȳ = _rand_like(y)
    _, back = ad.pullback(f, *args)
    cts = back(ȳ)
    lhs = _inner(ȳ, ẏ)
    rhs = sum(_inner(c, ṫ) for c, ṫ in zip(cts, tangents))
    assert lhs == pytest.approx(rhs, rel=rtol, abs=1e-9)


# --- functions under test ---------------------------------------------------------


@dataclass
class Pt:
    x: float
    y: float

    def dot(self, other):
        return self.x * other.x + self.y * other.y

    @property
    def r2(self):
        return self.x**2 + self.y**2


Pair = namedtuple("Pair", ["a", "b"])


def sq(x):
    return x * x


def user_fns(x):
    return sq(x) + sq(2.0 * x) * math.cos(x)


def power(x, n):
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def closure(x):
    def inner(y):
        return x * y + math.sin(x)

    return inner(x) + inner(3.0)


def lambda_closure(x):
    g = lambda y: x * y + y  # noqa: E731
    return g(x) * g(2.0)


def mlp(W1, b1, W2, x):
    h = np.tanh(W1 @ x + b1)
    return W2 @ h


def array_methods(x):
    return x.sum(axis=1) * x.T.mean(0) + x.reshape(-1)[:3]


def norm(p):
    return math.sqrt(p.x**2 + p.y**2)


def make_point(a, b):
    p = Pt(a, y=b * 2.0)
    return p.dot(Pt(1.0, a)) + p.r2


def scale(p, s):
    return Pt(p.x * s, p.y * s)


def set_attr(p, v):
    q = Pt(0.0, 0.0)
    q.x = p.x * v
    q.y = v
    return q.x * q.y


def pair_fn(t):
    return t.a * t.b + t[0]


def dict_fn(d):
    out = {}
    out["s"] = d["a"] * d["b"]
    out["t"] = d.get("a") + 1.0
    return out["s"] + out["t"] ** 2


def tuple_fn(t):
    a, (b, c) = t
    return a * b, {"c": c * a}


def branches(x, k):
    if x > 0:
        y = x * x
    elif x > -1:
        y = -x
    else:
        y = math.exp(x)
    return y * k


def loops(x, n):
    s = 0.0
    for i in range(n):
        s = s + x**i
    j = 0
    while j < 3:
        s = s * 0.5 + x
        j += 1
    return s


def break_continue(xs):
    s = 0.0
    for v in xs:
        if v < 0:
            continue
        if v > 10:
            break
        s += v * v
    return s


def early_return(x):
    for i in range(10):
        if x > 5:
            return x * i
        x = x * 2.0
    return -x


def comprehensions(xs):
    ys = [v * v for v in xs if v > 0]
    d = {i: v for i, v in enumerate(xs)}
    return sum(ys) + sum(v * d[i] for i, v in zip(range(3), xs))


def appends(x):
    out = []
    for i in range(4):
        out.append(x * i)
    a, *rest = out
    return a + sum(rest) * out[-1]


def array_rows(X):
    s = np.zeros(X.shape[1])
    for row in X:
        s = s + np.sin(row)
    return s


def star_args(*xs, scale=1.0, **kw):
    return sum(xs) * scale + kw["extra"] ** 2


def calls_star(x, y):
    args = (x, y)
    return star_args(*args, scale=x, extra=y) + star_args(x, **{"extra": x})


def defaults(x, k=2.0, *, m=3.0):
    return x * k + m


def calls_defaults(x):
    return defaults(x) + defaults(x, m=x) + defaults(x, k=x)


def with_partial(x, y):
    p = functools.partial(defaults, k=y)
    return p(x)


class Affine:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return self.w * x + 1.0


def callable_object(x):
    return Affine(2.0)(x) * x


def complex_holo(z):
    return z * z + 1j * z - np.exp(z)


def complex_parts(z):
    return abs(z) ** 2 + z.real * z.imag + (np.conj(z) * 1j).real


# (id, f, args, tangents)
CASES = [
    ("scalar-math", lambda x: math.sin(x) * math.exp(x) / (1 + x**2), (0.7,), (1.0,)),
    ("two-args", lambda x, y: x**y + math.atan2(x, y), (1.3, 0.4), (0.3, -1.2)),
    ("int-arg", lambda x: x**3 + 2 * x, (5,), (1.0,)),
    ("user-functions", user_fns, (0.4,), (1.0,)),
    ("recursion", power, (1.1, 4), (1.0, None)),
    ("closure", closure, (0.8,), (1.0,)),
    ("lambda-closure", lambda_closure, (0.8,), (1.0,)),
    (
        "mlp",
        mlp,
        tuple(RNG.standard_normal(s) for s in [(4, 3), (4,), (2, 4), (3,)]),
        tuple(RNG.standard_normal(s) for s in [(4, 3), (4,), (2, 4), (3,)]),
    ),
    (
        "array-methods",
        array_methods,
        (RNG.standard_normal((3, 3)),),
        (RNG.standard_normal((3, 3)),),
    ),
    (
        "numpy-expression",
        lambda x: np.mean(np.exp(x) * x**2, axis=0),
        (RNG.standard_normal((2, 3)),),
        (np.ones((2, 3)),),
    ),
    ("dataclass-arg", norm, (Pt(3.0, 4.0),), (Pt(1.0, -0.5),)),
    ("dataclass-built", make_point, (1.5, 0.5), (1.0, 2.0)),
    ("dataclass-out", scale, (Pt(1.0, 2.0), 3.0), (Tangent[Pt](x=1.0), 0.5)),
    ("setattr", set_attr, (Pt(1.0, 2.0), 3.0), (Pt(0.5, 0.0), 1.0)),
    ("namedtuple", pair_fn, (Pair(2.0, 3.0),), (Pair(1.0, 0.5),)),
    ("dict", dict_fn, ({"a": 2.0, "b": 3.0},), ({"a": 1.0, "b": -1.0},)),
    ("tuple-in-out", tuple_fn, ((2.0, (3.0, 4.0)),), ((1.0, (0.5, None)),)),
    ("if-positive", branches, (1.5, 2.0), (1.0, 0.5)),
    ("if-middle", branches, (-0.5, 2.0), (1.0, 0.5)),
    ("if-else", branches, (-3.0, 2.0), (1.0, 0.5)),
    ("for-while", loops, (1.2, 4), (1.0, None)),
    (
        "break-continue",
        break_continue,
        ([1.0, -2.0, 3.0, 11.0, 4.0],),
        ([1.0, 1.0, 1.0, 1.0, 1.0],),
    ),
    ("early-return", early_return, (1.5,), (1.0,)),
    ("late-return", early_return, (0.001,), (1.0,)),
    ("comprehensions", comprehensions, ([1.0, -2.0, 3.0],), ([0.5, 1.0, -1.0],)),
    ("append-starred", appends, (1.5,), (1.0,)),
    ("array-rows", array_rows, (RNG.standard_normal((3, 2)),), (RNG.standard_normal((3, 2)),)),
    ("star-and-kwargs", calls_star, (1.5, 0.5), (1.0, -1.0)),
    ("defaults-keywords", calls_defaults, (1.5,), (1.0,)),
    ("partial", with_partial, (1.5, 0.5), (1.0, 2.0)),
    ("callable-object", callable_object, (1.5,), (1.0,)),
    ("complex-holomorphic", complex_holo, (0.3 + 0.4j,), (1.0 - 0.5j,)),
    ("complex-parts", complex_parts, (0.3 + 0.4j,), (1.0 - 0.5j,)),
    (
        "complex-array",
        lambda z: np.sum(z * np.conj(z)).real + z * 2j,
        (np.array([1 + 1j, 2 - 1j]),),
        (np.array([0.5j, 1.0]),),
    ),
    ("cumsum", np.cumsum, (np.arange(1.0, 5.0),), (np.array([1.0, 0.0, 2.0, 0.0]),)),
    ("seed-slice-square", lambda a: 100 * a[:3] ** 2, (np.arange(1, 8),), (np.eye(7)[1],)),
]


@pytest.mark.parametrize("f, args, tangents", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_jvp_matches_finite_differences(f, args, tangents):
    check_fd(f, args, tangents)


# Cases reverse mode does not handle yet (the forward result is checked above).
REVERSE_XFAIL: dict[str, str] = {}


@pytest.mark.parametrize(
    "f, args, tangents",
    [
        pytest.param(*c[1:], marks=pytest.mark.xfail(reason=REVERSE_XFAIL[c[0]], strict=False))
        if c[0] in REVERSE_XFAIL
        else c[1:]
        for c in CASES
    ],
    ids=[c[0] for c in CASES],
)
def test_jvp_matches_reverse_mode(f, args, tangents):
    check_reverse(f, args, tangents)


# --- API ------------------------------------------------------------------------


def test_pushforward_is_linear_and_reruns():
    pf = ad.pushforward(lambda x, y: x**2 * y, 3.0, 2.0)
    assert pf(1.0, 0.0) == 12.0 and pf(0.0, 1.0) == 9.0
    assert pf(2.0, 3.0) == pytest.approx(2 * 12.0 + 3 * 9.0)


def test_jacobian_columns_of_the_seed_examples():
    a = np.arange(1, 8)
    cols = [ad.jvp(lambda a: 100 * a[:3] ** 2, (a,), (e,))[1] for e in np.eye(7)]
    want = np.zeros((3, 7))
    want[[0, 1, 2], [0, 1, 2]] = [200.0, 400.0, 600.0]
    np.testing.assert_allclose(np.stack(cols, axis=1), want)
    x = np.array([1.0, 2.0, 3.0])
    J = np.stack([ad.jvp(np.cumsum, (x,), (e,))[1] for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(J, np.tril(np.ones((3, 3))))


@pytest.mark.parametrize(
    "tangent",
    [None, ZeroTangent(), 0.0],
    ids=["None", "ZeroTangent", "zero-float"],
)
def test_unperturbed_argument(tangent):
    y, ẏ = ad.jvp(lambda x, y: x * y, (2.0, 3.0), (tangent, 1.0))
    assert (y, ẏ) == (6.0, 2.0)


@pytest.mark.parametrize(
    "f, args, want",
    [
        (lambda x: 3.0, (1.0,), 0.0),
        (lambda x: np.ones(2), (1.0,), np.zeros(2)),
        (lambda x: (x, "label", 2.0), (1.0,), (1.0, None, 0.0)),
        (lambda x: {"a": x, "b": 1j}, (1.0,), {"a": 1.0, "b": 0j}),
        (lambda x: round(x), (1.0,), None),
    ],
    ids=["constant", "constant-array", "tuple-with-str", "dict", "round-no-derivative"],
)
def test_output_tangents_are_plain_values(f, args, want):
    _, ẏ = ad.jvp(f, args, (1.0,))
    if isinstance(want, np.ndarray):
        np.testing.assert_array_equal(ẏ, want)
    else:
        assert ẏ == want


def test_dataclass_output_tangent_is_a_tangent():
    _, ṗ = ad.jvp(scale, (Pt(1.0, 2.0), 3.0), (None, 1.0))
    assert isinstance(ṗ, Tangent) and type(ṗ).primal_type is Pt
    assert (ṗ.x, ṗ.y) == (1.0, 2.0)


def test_structured_tangents_in():
    f = lambda t, d: t[0] * d["k"] + t[1][0]  # noqa: E731
    y, ẏ = ad.jvp(f, ((2.0, [1.0]), {"k": 3.0}), ((1.0, [1.0]), {"k": None}))
    assert (y, ẏ) == (7.0, 4.0)


def test_frule_via_ad_calls_back_into_forward_mode():
    y, ẏ = frule_via_ad(ad.ADConfig(), (None, 1.0), user_fns, 0.4)
    _, want = ad.jvp(user_fns, (0.4,), (1.0,))
    assert y == user_fns(0.4) and ẏ == pytest.approx(want)


def test_an_frule_wins_over_the_source():
    def double(x):
        return 2.0 * x

    @frule.register(double)
    def _(ḟ, ẋ, x):
        return double(x), 100.0 * ẋ

    assert ad.jvp(lambda x: double(x) + x, (1.0,), (1.0,)) == (3.0, 101.0)


def test_closure_tangent_flows_through_a_returned_function():
    def make(a):
        return lambda x: a * x

    def f(a, x):
        g = make(a)
        return g(x)

    check_fd(f, (2.0, 3.0), (1.0, 0.5))


def test_list_item_assignment_and_dict_writes():
    def f(x):
        v = [0.0, 0.0, 0.0]
        v[1] = x * 2.0
        d = {"a": x}
        d["b"] = d["a"] * v[1]
        return d["b"] + v[0]

    check_fd(f, (1.5,), (1.0,))


def test_in_place_update_of_a_shared_array_is_refused_in_both_modes():
    def f(x):
        y = x
        x += 1.0  # Python would update y (and the caller's array) too
        return np.sum(x * y)

    x = np.array([1.0, 2.0])
    with pytest.raises(ad.MutationError, match="'x' is updated in place"):
        ad.jvp(f, (x,), (np.ones(2),))
    with pytest.raises(ad.MutationError, match="'x' is updated in place"):
        ad.pullback(f, x)
    np.testing.assert_array_equal(x, [1.0, 2.0])  # refused before anything changed

    def g(x):
        acc = x * 1.0  # a fresh array: updating it in place changes nothing else
        acc += 1.0
        lst = [acc]
        lst += [x]
        return lst[0] * lst[1]

    y, ẏ = ad.jvp(g, (x,), (np.array([1.0, -1.0]),))
    np.testing.assert_allclose(ẏ, (2 * x + 1) * np.array([1.0, -1.0]))
    np.testing.assert_allclose(ad.pullback(g, x)[0], y)


def test_zero_tangents_run_the_plain_function():
    # With no perturbation no rule is needed: JAX's "symbolic zeros".
    def f(x, s):
        return x * len(str(s))

    assert ad.jvp(f, (2.0, "abc"), (1.0, None)) == (6.0, 3.0)


# --- errors -----------------------------------------------------------------------


def opaque(x):
    return x


exec("def opaque(x):\n    return x", globals())  # no source, no rule


def calls_opaque(x):
    return opaque(x) * 2.0


def test_no_rule_names_the_function_and_the_call_site():
    with pytest.raises(ad.NoRuleError) as e:
        ad.jvp(calls_opaque, (1.0,), (1.0,))
    assert "opaque" in str(e.value)


def test_builtin_without_frule_names_function_and_line():
    def f(a):
        return np.frombuffer(a)[0]  # reads raw bytes: no rule

    with pytest.raises(
        ad.NoRuleError, match=r"frombuffer in forward mode \(called at .*test_ad_forward.py:\d+\)"
    ):
        ad.jvp(f, (np.eye(2),), (np.ones((2, 2)),))


def test_unsupported_syntax_is_reported_with_file_and_line():
    def f(x):
        try:
            x = x * 2.0
        finally:
            return x  # noqa: B012  (discards the exception: refused)

    with pytest.raises(
        ad.UnsupportedSyntaxError, match=r"test_ad_forward.py:\d+: .*`return` in a `finally`"
    ):
        ad.jvp(f, (1.0,), (1.0,))


def test_in_place_array_assignment_is_differentiated_where_nobody_else_sees_it():
    def f(x):
        y = np.zeros(2)
        y[0] = x
        return y

    y, ẏ = ad.jvp(f, (1.5,), (1.0,))
    np.testing.assert_array_equal(y, [1.5, 0.0])
    np.testing.assert_array_equal(ẏ, [1.0, 0.0])

    def g(x):
        y = np.zeros(2)
        w = y
        y[0] = x  # w sees it too
        return w

    with pytest.raises(ad.MutationError, match="'y' is updated in place.*'w'"):
        ad.jvp(g, (1.0,), (1.0,))


def scaled(x, *, k=1.0):
    return k * x


@frule.register(scaled)
def _(ḟ, ẋ, x, *, k=1.0):
    return scaled(x, k=k), k * ẋ


def test_keyword_to_a_rule_raises_only_if_its_derivative_is_needed():
    assert ad.jvp(lambda x: scaled(x, k=3.0), (1.0,), (1.0,)) == (3.0, 3.0)
    with pytest.raises(Exception, match="keyword argument.*'k'"):
        ad.jvp(lambda x: scaled(2.0, k=x), (1.0,), (1.0,))


@pytest.mark.parametrize(
    "args, tangents, match",
    [
        ((1.0,), (1.0, 2.0), "1 argument"),
        ((np.ones(2),), (np.ones(3),), "shape"),
        ((1.0,), ("a",), "must be a number"),
        (((1.0, 2.0),), ((1.0,),), "tuple or list of 2"),
    ],
    ids=["count", "shape", "type", "structure"],
)
def test_bad_tangents_are_clear_errors(args, tangents, match):
    with pytest.raises((TypeError, ValueError), match=match):
        ad.jvp(lambda *a: a[0], args, tangents)


def test_args_must_be_tuples():
    with pytest.raises(TypeError, match=r"jvp\(f, \(x,\), \(ẋ,\)\)"):
        ad.jvp(lambda x: x, 1.0, 1.0)


def test_forward_mode_through_higher_order_builtins():
    import functools

    def f(xs, a):
        ys = list(map(lambda v: v * a, xs))
        s = sorted(ys, reverse=True)
        prod = functools.reduce(lambda p, q: p * q, s[:2], 1.0)
        return prod + sum(filter(lambda v: v > 0, xs))

    xs, a = [1.0, 3.0, -2.0], 2.0
    gx, ga = ad.gradient(f, xs, a)
    for i, g in enumerate(gx):
        e = [0.0, 0.0, 0.0]
        e[i] = 1.0
        assert ad.jvp(f, (xs, a), (e, 0.0))[1] == pytest.approx(g or 0.0)
    assert ad.jvp(f, (xs, a), (None, 1.0))[1] == pytest.approx(ga)
