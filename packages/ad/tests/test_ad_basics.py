"""ad.gradient on straight-line code: the seed examples, calls and numerics."""

import cmath
import functools
import math

import numpy as np
import pytest

import ad


def test_polynomial_at_an_int():
    assert ad.gradient(lambda x: 3 * x**2 + 2 * x + 1, 5) == (32,)


def test_product_of_two_arguments():
    assert ad.gradient(lambda a, b: a * b, 2, 3) == (3, 2)


def test_matrix_vector_sum():
    rng = np.random.default_rng(0)
    W = rng.normal(size=(3, 4))
    x = rng.normal(size=4)
    (g,) = ad.gradient(lambda W: np.sum(W @ x), W)
    np.testing.assert_allclose(g, np.outer(np.ones(3), x))


def test_math_expression_against_hand_derivative():
    def f(x, y):
        z = x * y
        return math.sin(z) + x / y - math.exp(-x)

    x, y = 0.7, 1.3
    gx, gy = ad.gradient(f, x, y)
    assert gx == pytest.approx(y * math.cos(x * y) + 1 / y + math.exp(-x))
    assert gy == pytest.approx(x * math.cos(x * y) - x / y**2)


@pytest.mark.parametrize(
    "f, args",
    [
        (lambda x: math.tanh(x) * math.log1p(x * x), (0.4,)),
        (lambda x, y: math.atan2(y, x) + math.hypot(x, y), (0.3, -1.2)),
        (lambda x: (x - 1) ** 3 / (x + 2), (1.5,)),
        (lambda x: -x + (+x) * abs(x) % 7, (2.3,)),
        (lambda x: np.sum(np.sin(x) ** 2 * np.exp(x)), (np.linspace(0, 1, 5),)),
        (lambda A, b: np.sum((A @ b - 1.0) ** 2), (np.eye(3) + 0.1, np.arange(3.0))),
        (lambda x: np.mean(x.T @ x) + x.sum() + x[1, 2], (np.arange(6.0).reshape(2, 3) / 5,)),
    ],
)
def test_against_finite_differences(check_grad, f, args):
    check_grad(f, *args)


def test_calls_into_user_functions_and_defaults(check_grad):
    def square(v):
        return v * v

    def poly(x, a=2.0, *, b=3.0):
        return a * square(x) + b * x

    def f(x):
        return poly(x) + poly(x, 1.0, b=-1.0) + poly(a=0.5, x=x)

    (g,) = check_grad(f, 1.5)
    assert g == pytest.approx((4 * 1.5 + 3) + (2 * 1.5 - 1) + (1.5 + 3))


def test_keyword_argument_derivatives_flow_into_user_functions():
    def scaled(x, *, scale):
        return x * scale

    assert ad.gradient(lambda x, s: scaled(x, scale=s), 2.0, 3.0) == (3.0, 2.0)


def test_varargs_and_kwargs():
    def total(*xs, **weights):
        out = 0.0
        for x in xs:
            out = out + x
        return out * weights["w"]

    assert ad.gradient(lambda a, b, w: total(a, b, w=w), 1.0, 2.0, 3.0) == (3.0, 3.0, 3.0)


class Linear:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, x):
        return self.W @ x + self.b

    def loss(self, x):
        return np.sum(self(x) ** 2)


def test_methods_bound_unbound_and_callable_objects():
    W, b, x = np.eye(2) * 2.0, np.array([0.5, -1.0]), np.array([1.0, 3.0])
    m = Linear(W, b)
    r = W @ x + b
    (gx,) = ad.gradient(lambda x: m.loss(x), x)
    np.testing.assert_allclose(gx, 2 * W.T @ r)
    (gx2,) = ad.gradient(lambda x: Linear.loss(m, x), x)
    np.testing.assert_allclose(gx2, gx)
    (gm,) = ad.gradient(lambda m: np.sum(m(x)), m)
    np.testing.assert_allclose(gm.W, np.outer(np.ones(2), x))
    np.testing.assert_allclose(gm.b, np.ones(2))


def test_functools_partial():
    def f(a, x):
        return a * x * x

    p = functools.partial(f, 3.0)
    assert ad.gradient(lambda x: p(x), 2.0) == (12.0,)


def test_nested_def_and_closure_over_argument():
    def f(x):
        def g(y):
            return x * y

        return g(3.0) + g(x)

    assert ad.gradient(f, 2.0) == (3.0 + 2 * 2.0,)


def test_closure_tangent_through_internal_pullback():
    a = 2.0
    f = lambda x: x * a  # noqa: E731
    y, back = ad._pullback(f, 3.0)
    df, dx = back(1.0)
    assert y == 6.0 and dx == 2.0
    assert df.a == 3.0


def test_complex_abs_squared():
    assert ad.gradient(lambda c: abs(c) ** 2, 1 + 2j) == (2 + 4j,)


def test_holomorphic_log_real_part():
    (g,) = ad.gradient(lambda z: cmath.log(z).real, 1 + 2j)
    assert g.conjugate() == pytest.approx(0.2 - 0.4j)


def test_array_output_pullback_with_seed():
    x = np.array([1.0, 2.0, 3.0])
    y, back = ad.pullback(lambda x: x**2, x)
    np.testing.assert_allclose(y, x**2)
    (g,) = back(np.array([1.0, 0.0, 2.0]))
    np.testing.assert_allclose(g, [2.0, 0.0, 12.0])


def test_gradient_of_builtin_with_a_rule():
    assert ad.gradient(math.sin, 0.0) == (1.0,)
    assert ad.gradient(abs, -2.0) == (-1.0,)


def test_no_gradient_is_none():
    assert ad.gradient(lambda x, y: x * 2.0, 1.0, 5.0) == (2.0, None)


def test_float32_stays_float32():
    x = np.ones(3, dtype=np.float32)
    (g,) = ad.gradient(lambda x: np.sum(x * x), x)
    assert g.dtype == np.float32


def test_star_and_double_star_at_the_call_site():
    def inner(a, b, c, *, scale=1.0, shift=0.0):
        return (a * b + c) * scale + shift

    def f(x, y):
        args = (x, y)
        kw = {"scale": y}
        return inner(*args, 2.0, **kw, shift=x) + inner(x, *[y, x])

    check = ad.gradient(f, 3.0, 4.0)
    # first: (x*y + 2) * y + x ; second: x*y + x
    assert check == (pytest.approx(4.0 * 4.0 + 1 + 4.0 + 1), pytest.approx(2 * 3.0 * 4.0 + 2 + 3.0))


def test_star_args_forwarding_lambda():
    def loss(a, b, data):
        return a * b * data

    g = lambda *p: loss(*p, 5.0)  # noqa: E731
    assert ad.gradient(g, 2.0, 3.0) == (15.0, 10.0)


def _weighted(a, b, c=1.0):
    return a * b + c * a * a


@pytest.mark.parametrize(
    "spelling",
    ["tuple", "tuple param", "list", "generator", "two parts", "nested tuple"],
)
def test_calls_with_a_starred_sequence_in_both_modes_and_at_second_order(spelling):
    def f(x, y):
        if spelling == "tuple":
            t = (x, y)
            return _weighted(*t)
        if spelling == "list":
            return _weighted(*[x, y])
        if spelling == "generator":
            return _weighted(*(v for v in (x, y)))
        if spelling == "two parts":
            return _weighted(*(x,), *(y, x))
        pair = ((x, y),)
        return _weighted(*pair[0])

    def g(p):  # the parameters as one tuple, passed on with *
        return _weighted(*p) * p[1]

    want = {
        "two parts": lambda x, y: (y + 3 * x * x, x),  # a*b + c*a*a with c = x
    }.get(spelling, lambda x, y: (y + 2 * x, x))
    if spelling == "tuple param":
        gx, gy = ad.gradient(g, (3.0, 4.0))[0]
        # (x y + x²) y: d/dx = (y + 2x) y, d/dy = x y + x² + x y
        assert (gx, gy) == (pytest.approx(40.0), pytest.approx(33.0))
        assert ad.jvp(g, ((3.0, 4.0),), ((1.0, 0.0),))[1] == pytest.approx(40.0)
        return
    assert ad.gradient(f, 3.0, 4.0) == tuple(pytest.approx(v) for v in want(3.0, 4.0))
    assert ad.jvp(f, (3.0, 4.0), (1.0, 0.0))[1] == pytest.approx(want(3.0, 4.0)[0])
    h = ad.hessian(lambda v: f(v[0], v[1]), np.array([3.0, 4.0]))
    hxx = 6.0 * 3.0 if spelling == "two parts" else 2.0
    np.testing.assert_allclose(h, [[hxx, 1.0], [1.0, 0.0]])


double, square = (lambda x: x * 2.0), (lambda x: x * x)  # two lambdas on one line


def test_several_lambdas_on_one_line_are_told_apart():
    assert ad.gradient(double, 3.0) == (2.0,)
    assert ad.gradient(square, 3.0) == (6.0,)


def test_same_shaped_lambdas_on_one_line_use_column_positions():
    f, g = (lambda x: x * 2.0), (lambda x: x * 3.0)
    assert ad.gradient(f, 1.0) == (2.0,)
    assert ad.gradient(g, 1.0) == (3.0,)


def _pair(a, b, *, scale=1.0):
    return a * scale, b * scale


TABLE = {
    "cube": lambda x: x**3,
}


def test_lambdas_inside_call_arguments_and_dict_entries_are_found():
    # The lambda's line is not a statement on its own: a continuation line
    # with keyword arguments, and an entry of a dict display.
    got = _pair(
        ad.gradient(lambda x: x * 2.0, 1.0)[0], ad.gradient(lambda y: y**2, 1.0)[0], scale=1.0
    )
    assert got == (2.0, 2.0)
    assert ad.gradient(TABLE["cube"], 2.0) == (12.0,)


def test_first_transform_is_cached_per_code_object():
    from ad.transform import cache

    def h(x):
        return x * x + 1.0

    ad.gradient(h, 1.0)
    entry = cache._CACHE[(h.__code__, False)]
    ad.gradient(h, 2.0)
    assert cache._CACHE[(h.__code__, False)] is entry


@pytest.mark.parametrize("x", [-1.5, -0.5, 0.0, 0.5, 2.0])
@pytest.mark.parametrize("n", [1, 2, 3, -1, -2])
def test_integer_powers_of_any_float(check_grad, x, n):
    if x == 0.0 and n < 1:
        pytest.skip("x**n is not finite at 0 for n < 1")
    (g,) = ad.gradient(lambda v: v**n, x)
    assert g == pytest.approx(n * x ** (n - 1))
    check_grad(lambda v: v**n + 0.0, x)


def test_inlined_arithmetic_with_the_target_as_an_operand():
    def f(x, y):
        r = x
        r = r * y  # target is an operand: the partial must be the old r
        r = r * r
        r = -r
        r = r - y
        r = r + x
        return r

    x, y = 1.5, -0.7
    gx, gy = ad.gradient(f, x, y)
    # f = -(x*y)^2 - y + x
    assert gx == pytest.approx(-2 * x * y * y + 1)
    assert gy == pytest.approx(-2 * x * x * y - 1)


@pytest.mark.parametrize("x, y", [(1.3, -0.4), (-2.0, 0.5)])
def test_inlined_division_and_integer_powers(check_grad, x, y):
    def f(a, b):
        q = a / b
        r = b / a
        s = q**2 + r**3 - (a * b) ** 1
        return s / (1.0 + q * q)

    check_grad(f, x, y)
    with pytest.raises(ZeroDivisionError):
        ad.gradient(f, 1.0, 0.0)


def test_fast_paths_give_way_to_a_user_rule(tmp_path):
    """A rule registered for float multiplication later must win over the inline
    fast path (checked in a fresh interpreter: rules cannot be unregistered)."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "override.py"
    script.write_text(
        textwrap.dedent(
            """
            import math, operator
            import ad
            from rulescore import NoTangent, rrule

            def f(x):
                return x * 3.0 + math.sin(x)

            assert ad.gradient(f, 0.0) == (4.0,)

            @rrule.register(operator.mul)
            def _(a: float, b: float):
                def doubled_pullback(ȳ):
                    return NoTangent(), 2 * ȳ * b, 2 * ȳ * a
                return a * b, doubled_pullback

            @rrule.register(math.sin)
            def _(x: float):
                return math.sin(x), lambda ȳ: (NoTangent(), 10 * ȳ)

            assert ad.gradient(f, 0.0) == (16.0,), ad.gradient(f, 0.0)
            print("ok")
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize(
    "shapes", [((3,), (3,)), ((2, 3), (3,)), ((3,), (2, 3)), ((2, 1), (1, 3)), ((), (2,))]
)
def test_array_arithmetic_fast_paths_match_finite_differences(check_grad, shapes):
    rng = np.random.default_rng(0)
    a, b = (rng.normal(size=s) for s in shapes)

    def f(a, b):
        s = a + b
        d = a - b
        p = a * b
        q = a / (b * b + 1.0)
        return np.sum(s * d + p**2 - q + (-a) ** 3)

    check_grad(f, a, b)


def test_rrule_via_ad_with_ad_config():
    y, pb = ad.rrule_via_ad(ad.ADConfig(), lambda x: x * x * 3.0, 2.0)
    assert y == 12.0 and pb(1.0)[1] == 12.0
    y, ẏ = ad.frule_via_ad(ad.ADConfig(), (None, 1.0), lambda x: x * x * 3.0, 2.0)
    assert (y, ẏ) == (12.0, 12.0)


# fmt: off
def _ends_with_a_multiline_call(x):
    def inner(y):
        return y * (
            x
            + 1.0
        )

    return inner(x) + _ends_with_a_string(
        x,
    )
# fmt: on


def _ends_with_a_string(x):
    s = """a
multi-line string"""
    return x**2 * len(s) / 19  # a comment after the last statement


def test_definitions_are_read_whole_up_to_their_last_line():
    # The source block is bounded by the code object's positions (nested
    # functions included): every line of a multi-line last statement is kept.
    assert ad.gradient(_ends_with_a_multiline_call, 2.0) == (9.0,)
    assert ad.gradient(_ends_with_a_string, 3.0) == (6.0,)


@pytest.mark.parametrize(
    "f, args", [(math.sin, (0.7,)), (math.atan2, (0.3, -1.2)), (math.hypot, (3.0, 4.0))]
)
def test_scalar_rule_fast_pullbacks_match_the_rule_for_every_cotangent(f, args):
    from ad.runtime.reverse import rcall
    from rulescore import Thunk, ZeroTangent, rrule, unthunk

    y, pb = rcall(f, *args)
    y0, pb0 = rrule(f, *args)
    assert y == y0 and type(pb) is not tuple and isinstance(pb, tuple)  # a tuple with __call__
    for s in (1.5, -2.0, Thunk(lambda: 0.25), ZeroTangent(), 1.0 + 2.0j):
        got, want = pb(s), pb0(s)
        assert len(got) == len(want)
        for a, b in zip(got, want):
            a, b = unthunk(a), unthunk(b)
            assert type(a) is type(b) and (a == b), (s, a, b)
