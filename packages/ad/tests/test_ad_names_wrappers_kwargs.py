"""Names, wrappers and keyword arguments (issue 18, items 6 and 8), in reverse
and forward mode: nested functions whose parameters shadow outer variables,
lambdas written anywhere a statement allows an expression, functions wrapped by
``functools.lru_cache``/``cache``/``wraps``/``staticmethod``, ``np.vectorize``,
and keyword arguments to the entry points (passed to ``f``, not differentiated).

Each derivative is checked against central finite differences (``fd_gradient``)
or a hand-derived value, in reverse mode (``ad.gradient``) and in forward mode
(``ad.jvp`` along each coordinate, or along a random direction).
"""

from __future__ import annotations

import contextlib
import functools
import math
import re

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad
from rulescore import NoTangent, rrule

HERE = re.escape(__file__)


def _close(a, b, rtol=1e-6, atol=1e-8):
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _close(x, y, rtol, atol)
        return
    a = 0.0 if a is None else a
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol, atol)


def check(f, *args, rtol=1e-6, atol=1e-7):
    """Reverse mode against finite differences; forward mode (one ``jvp`` along a
    random direction) against the reverse gradient's inner product with it."""
    grads = ad.gradient(f, *args)
    expected = fd_gradient(f, *args)
    _close(list(grads), list(expected), rtol, atol)
    rng = np.random.default_rng(0)
    dirs = tuple(
        float(rng.standard_normal()) if isinstance(a, float) else rng.standard_normal(np.shape(a))
        for a in args
    )
    y, ẏ = ad.jvp(f, args, dirs)
    _close(y, f(*args))
    want = sum(float(np.sum(np.asarray(g) * d)) for g, d in zip(expected, dirs))
    _close(ẏ, want, rtol=1e-5, atol=1e-6)
    return grads


# --- item 6a: a nested function's own names are not captures ------------------------


def min_max(xs):
    return min(xs, key=lambda v: v * v) + max(abs(v) for v in xs)


class TestShadowedNames:
    def test_issue_example_lambda_key_beside_generator(self):
        xs = [1.0, -2.0, 3.0]
        (g,) = ad.gradient(min_max, xs)
        _close(g, [1.0, 0.0, 1.0])  # min by square: 1.0; max |v|: 3.0
        y, ẏ = ad.jvp(min_max, (xs,), ([0.5, 7.0, 2.0],))
        assert y == 4.0 and ẏ == 2.5

    def test_inner_def_parameter_named_like_outer_variable(self):
        def f(x):
            s = x * 2.0

            def g(s):  # its own s, not the outer one
                return s * s

            s = s + 1.0  # the outer s is rebound: a capture of it would be refused
            return g(x) + s

        assert check(f, 1.5) == (2 * 1.5 + 2.0,)

    def test_lambda_parameter_named_like_loop_variable(self):
        def f(x):
            total = 0.0
            for v in (x, 2.0 * x, x * x):
                sq = lambda v: v * v  # noqa: E731
                total = total + sq(v) + v
            return total

        # d/dx [x² + 4x² + x⁴ + x + 2x + x²] = 12x + 4x³ + 3
        assert check(f, 0.7) == pytest.approx((12 * 0.7 + 4 * 0.7**3 + 3,))

    def test_keyword_only_and_varargs_parameters_shadow(self):
        def f(x, y):
            args = x * y
            kw = x + y
            g = lambda *args, kw=1.0: sum(args) * kw  # noqa: E731
            h = lambda a, *, kw: a * kw  # noqa: E731
            return g(x, y, kw=3.0) + h(args, kw=kw) + args

        check(f, 0.3, 1.7)

    def test_nested_defs_two_deep(self):
        def f(x):
            t = x * 3.0

            def outer(t):
                def inner(t):
                    return t * t * x  # x: a genuine capture, t: inner's own

                return inner(t + 1.0) + t

            t = t - 1.0
            return outer(t)

        check(f, 0.4)

    def test_comprehension_inside_lambda_has_its_own_target(self):
        def f(xs, w):
            i = w * 2.0
            score = lambda w: sum(w * i for i in xs)  # noqa: E731  # i: the comprehension's
            i = i + 1.0
            return score(w) + i

        check(f, np.array([1.0, 2.0, 3.0]), 0.5)

    def test_default_read_in_outer_scope_lambda_parameter_shadows(self):
        def f(x):
            c = x * x
            g = lambda x, c=2.0: x * c  # noqa: E731  # both its own
            return g(x) + c

        assert check(f, 1.25) == pytest.approx((2.0 + 2 * 1.25,))

    def test_genuine_late_capture_is_refused_naming_the_users_function(self):
        def late(x):
            k = x
            g = lambda v: v * k  # noqa: E731
            k = x * x
            return g(2.0)

        def late_in_loop(x):
            fs = []
            for i in range(3):
                k = x * i

                def scale(v):
                    return v * k  # noqa: B023  # the late binding under test

                fs.append(scale)
            return fs[0](1.0) + fs[1](1.0)

        for run in (lambda f: ad.gradient(f, 3.0), lambda f: ad.jvp(f, (3.0,), (1.0,))):
            with pytest.raises(ad.UnsupportedSyntaxError) as err:
                run(late)
            msg = str(err.value)
            assert re.search(rf"{HERE}:\d+: in late: the lambda at line \d+ captures 'k'", msg)
            assert "To fix" in msg and not re.search(r"'_ad_\w+'", msg)
            with pytest.raises(ad.UnsupportedSyntaxError) as err:
                run(late_in_loop)
            msg = str(err.value)
            assert re.search(rf"{HERE}:\d+: in late_in_loop: the nested function 'scale'", msg)
            assert "To fix" in msg

    def test_capture_rebound_only_before_the_definition_is_allowed(self):
        def early(x):
            k = x
            k = k * k
            g = lambda v: v * k  # noqa: E731  # sees the last value of k
            return g(3.0)

        assert check(early, 1.5) == pytest.approx((6 * 1.5,))

    def test_default_value_carrying_a_derivative_is_refused(self):
        def by_default(x):
            g = lambda v, k=x: v * k  # noqa: E731
            return g(2.0)

        def by_decorator_free_default(x):
            def g(v, k=x * 2.0):
                return v * k

            return g(2.0)

        for f in (by_default, by_decorator_free_default):
            for run in (lambda g: ad.gradient(g, 3.0), lambda g: ad.jvp(g, (3.0,), (1.0,))):
                with pytest.raises(ad.UnsupportedSyntaxError) as err:
                    run(f)
                msg = str(err.value)
                assert re.search(rf"{HERE}:\d+: in {f.__name__}: .*default value", msg), msg
                assert "'x'" in msg and "To fix" in msg

    def test_inactive_default_is_fine(self):
        def f(x):
            total = 0.0
            for i in range(3):
                g = lambda v, i=i: v * (i + 1)  # noqa: E731  # the classic idiom, an int
                total = total + g(x)
            return total

        assert check(f, 2.0) == (6.0,)

    def test_hessian_through_shadowing_lambda(self):
        def f(x):
            v = x * x
            cube = lambda v: v * v * v  # noqa: E731
            return cube(x) + v

        assert ad.hessian(f, 1.5) == pytest.approx(6 * 1.5 + 2)


# --- item 6b: lambdas anywhere -----------------------------------------------------------


def for_header(w):
    t = 0.0
    for fn in (lambda w: w * 2.0, lambda w: w**2):
        t = t + fn(w)
    return t


def for_header_one_name(x):
    t = 0.0
    for fn in (lambda u: u * 3.0, lambda u: u**3, lambda u: math.sin(u)):
        t = t + fn(x)
    return t


def while_condition(x):
    n = 0
    while (lambda k: k < 3)(n):
        x = x * (lambda v: v * 0.5 + 1.0)(x)
        n += 1
    return x


@contextlib.contextmanager
def _holding(fn):
    yield fn


with _holding(lambda v: v * v * v) as WITH_ITEM:  # a lambda in a `with` item
    pass


def dict_literal(x):
    ops = {
        "double": lambda v: v * 2.0,
        "sine": lambda v: math.sin(v),
    }
    table = [
        lambda v: v**2,
        lambda v: math.exp(-v),
    ]
    return ops["double"](x) + ops["sine"](x) + table[0](x) + table[1](x)


def default_argument(x, h=lambda v: v**3 + v):
    return h(x)


def _compose(outer):
    def decorate(fn):
        return lambda x: outer(fn(x))

    return decorate


@_compose(lambda y: y * y + 1.0)
def decorated(x):
    return x * 3.0


def if_test(x):
    if (lambda v: v > 0.0)(x):
        return x * x
    return -x


def lambdas_pair():
    return (lambda v: v * 5.0, lambda v: v * v)


def use_pair(x):
    a, b = lambdas_pair()
    return a(x) + b(x)


class TestLambdaPositions:
    def test_for_header_the_issue_example(self):
        assert check(for_header, 3.0) == (2.0 + 6.0,)

    def test_two_or_three_lambdas_with_one_parameter_name_on_a_for_line(self):
        x = 0.8
        assert check(for_header_one_name, x) == pytest.approx((3 + 3 * x * x + math.cos(x),))

    def test_while_condition(self):
        check(while_condition, 0.5)

    def test_with_item(self):
        assert check(WITH_ITEM, 2.0) == (12.0,)

    def test_dict_and_list_literals_spanning_lines(self):
        x = 0.6
        want = 2.0 + math.cos(x) + 2 * x - math.exp(-x)
        assert check(dict_literal, x) == pytest.approx((want,))

    def test_default_argument(self):
        assert check(default_argument, 2.0) == (13.0,)

    def test_decorator_argument(self):
        assert check(decorated, 2.0) == (36.0,)  # (3x)² + 1: 18x

    def test_if_test(self):
        assert check(if_test, 2.0) == (4.0,)
        assert check(if_test, -2.0) == (-1.0,)

    def test_return_of_a_tuple_of_lambdas(self):
        assert check(use_pair, 2.0) == (9.0,)

    def test_lambda_in_header_of_array_code(self):
        def f(a):
            total = 0.0
            for g in (lambda m: np.sum(m**2), lambda m: np.prod(m)):
                total = total + g(a)
            return total

        check(f, np.array([0.5, 1.5, -2.0]))


# --- item 6c: wrapped functions ----------------------------------------------------------


@functools.lru_cache
def cached_square(x):
    return x * x


@functools.cache
def cached_power(x, p=3):
    return x**p


@functools.lru_cache(maxsize=4)
def cached_curve(a, b):
    return math.sin(a) * b + a * b * b


class Shapes:
    @staticmethod
    @functools.lru_cache
    def area(r):
        return math.pi * r * r

    @functools.lru_cache  # the staticmethod object, called through the cache
    @staticmethod
    def cube(r):
        return r**3

    @classmethod
    @functools.lru_cache
    def scaled(cls, r):
        return 2.0 * r * r


_NS: dict = {}
exec(  # wrappers with no source of their own, as a library made by exec would be
    "import functools\n"
    "def passing(fn):\n"
    "    @functools.wraps(fn)\n"
    "    def wrapper(*args, **kwargs):\n"
    "        return fn(*args, **kwargs)\n"
    "    return wrapper\n"
    "def doubling(fn):\n"
    "    @functools.wraps(fn)\n"
    "    def wrapper(x):\n"
    "        return 2.0 * fn(x)\n"
    "    return wrapper\n",
    _NS,
)


@_NS["passing"]
def sourceless_wrapped(x, y):
    return math.exp(x) * y


@_NS["doubling"]
def doubled(x):
    return x * x


def doubling_with_source(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 2.0 * fn(x)

    return wrapper


@doubling_with_source
def doubled_in_file(x):
    return x * x


class _Opaque:
    """A wrapper with no Python ``__call__`` source that ad could read."""

    def __init__(self, fn):
        self.__wrapped__ = fn
        self._call = fn

    __call__ = property(lambda self: self._call)  # a data descriptor, not a def


@functools.lru_cache
def ruled(x):
    return x * x


@rrule.register(ruled)
def _(x):
    def ruled_pullback(ȳ):
        return NoTangent(), ȳ * 100.0  # deliberately not 2x: the rule must win

    return ruled(x), ruled_pullback


_CALLS: list = []


@functools.lru_cache
def counted(x):
    _CALLS.append(1)  # a global: plain Python
    return x * x


class TestWrappers:
    def test_lru_cache_issue_example(self):
        def lsq(x):
            return cached_square(x) + 1.0

        assert check(lsq, 3.0) == (6.0,)
        assert check(lambda a, b: cached_curve(a, b), 0.4, 1.3)[1] == pytest.approx(
            math.sin(0.4) + 2 * 0.4 * 1.3
        )

    def test_value_is_the_cached_one_and_the_cache_is_used(self):
        counted.cache_clear()
        _CALLS.clear()
        assert ad.withgradient(lambda x: counted(x) + 0.0, 2.0) == (4.0, (4.0,))
        assert counted.cache_info().misses == 1
        assert ad.withgradient(lambda x: counted(x) + 0.0, 2.0) == (4.0, (4.0,))
        assert counted.cache_info().hits >= 1  # Python's call happened: a hit
        # The miss ran it as Python once, and each gradient transformed it once more.
        assert len(_CALLS) == 3
        assert ad.jvp(lambda x: counted(x) + 0.0, (2.0,), (1.0,)) == (4.0, 4.0)
        assert counted.cache_info().misses == 1

    def test_stale_cache_value_is_what_python_returns(self):
        state = {"c": 1.0}

        @functools.cache
        def reads_state(x):
            return state["c"] * x * x

        reads_state(2.0)  # cached with c = 1
        state["c"] = 5.0
        val, (g,) = ad.withgradient(lambda x: reads_state(x), 2.0)
        assert val == 4.0  # Python returns the cached value
        assert g == 20.0  # the derivative of the function as it is now

    def test_cache_with_keywords_and_defaults(self):
        assert check(lambda x: cached_power(x, p=4), 1.5) == (4 * 1.5**3,)
        assert check(lambda x: cached_power(x), 1.5) == (3 * 1.5**2,)
        assert check(cached_power, 0.5) == (0.75,)

    def test_partial_of_a_cached_function(self):
        half = functools.partial(cached_power, p=2)
        assert check(lambda x: half(x) * x, 2.0) == (12.0,)
        assert check(half, 3.0) == (6.0,)

    def test_staticmethod_and_classmethod_around_and_inside_the_cache(self):
        assert check(lambda r: Shapes.area(r), 2.0) == pytest.approx((4 * math.pi,))
        assert check(lambda r: Shapes.cube(r), 2.0) == (12.0,)
        assert check(lambda r: Shapes.scaled(r), 2.0) == (8.0,)
        assert check(lambda r: Shapes().scaled(r), 1.0) == (4.0,)

    def test_sourceless_python_wrapper_differentiates_its_wrapped_function(self):
        x, y = 0.3, 1.7
        assert check(sourceless_wrapped, x, y) == pytest.approx((math.exp(x) * y, math.exp(x)))
        assert check(lambda a: sourceless_wrapped(a, y=2.0), x) == pytest.approx((2 * math.exp(x),))

    def test_c_level_callable_with_wrapped(self):
        opaque = _Opaque(lambda v: v**3)
        assert check(lambda x: opaque(x) + x, 2.0) == (13.0,)

    def test_python_wrapper_with_source_is_transformed_as_before(self):
        assert check(doubled_in_file, 3.0) == (12.0,)  # the wrapper's 2 counts

    def test_registered_rule_for_the_wrapper_wins(self):
        assert ad.gradient(lambda x: ruled(x) + 0.0, 3.0) == (100.0,)

    def test_hessian_through_a_cache(self):
        assert ad.hessian(lambda x: cached_square(x) * x, 2.0) == pytest.approx(12.0)
        H = ad.hessian(lambda v: cached_curve(v[0], v[1]), np.array([0.4, 1.3]))
        a, b = 0.4, 1.3
        _close(H, [[-math.sin(a) * b, math.cos(a) + 2 * b], [math.cos(a) + 2 * b, 2 * a]])

    def test_sourceless_wrapper_that_changes_the_value_is_refused(self):
        def use(x):
            return doubled(x) + 1.0

        for run in (lambda: ad.gradient(use, 3.0), lambda: ad.jvp(use, (3.0,), (1.0,))):
            with pytest.raises(ad.NoRuleError) as err:
                run()
            msg = str(err.value)
            assert re.search(rf"called at {HERE}:\d+", msg), msg
            assert "To fix" in msg and "__wrapped__" in msg


# --- item 6d: np.vectorize ------------------------------------------------------------------


class TestVectorize:
    def test_issue_example(self):
        x = np.array([1.0, 2.0, 0.5])

        def f(x):
            return np.sum(np.vectorize(lambda t: t * t + math.sin(t))(x))

        (g,) = check(f, x)
        _close(g, 2 * x + np.cos(x))

    def test_value_matches_numpy(self):
        v = np.vectorize(lambda s, t: s * t + 1.0)
        a, b = np.array([[1.0], [2.0]]), np.array([0.5, 0.25, 2.0])
        y, back = ad.pullback(lambda a, b: v(a, b), a, b)
        expected = v(a, b)
        assert type(y) is type(expected) and y.dtype == expected.dtype
        np.testing.assert_array_equal(y, expected)
        ga, gb = back(np.ones((2, 3)))
        _close(ga, np.full((2, 1), b.sum()))
        _close(gb, np.full(3, a.sum()))

    def test_several_arguments_with_broadcasting_and_otypes(self):
        def f(a, b):
            v = np.vectorize(lambda s, t: s * math.exp(t) - t, otypes=[float])
            return np.sum(v(a, b) ** 2)

        check(f, np.array([[1.0], [2.0]]), np.array([0.1, 0.2, 0.3]))

    def test_excluded_arguments_are_passed_whole(self):
        def f(x, c):
            v = np.vectorize(lambda t, c, scale=1.0: c * t**3 * scale, excluded={1, "scale"})
            return np.sum(v(x, c, scale=2.0))

        x = np.array([1.0, 2.0, 0.5])
        gx, gc = check(f, x, 0.5)
        _close(gx, 2 * 0.5 * 3 * x**2)
        _close(gc, 2 * np.sum(x**3))

    def test_keyword_arguments_are_broadcast(self):
        def f(x, y):
            return np.sum(np.vectorize(lambda t, u=1.0: t * u + u * u)(x, u=y))

        check(f, np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0]))

    def test_closure_over_a_differentiated_variable(self):
        def f(x, a):
            v = np.vectorize(lambda t: a * t * t)
            return np.sum(v(x))

        x = np.array([1.0, 2.0, 0.5])
        gx, ga = check(f, x, 2.0)
        assert ga == pytest.approx(np.sum(x**2))

    def test_integer_output_carries_no_derivative(self):
        def f(x):
            return np.sum(np.vectorize(lambda t: t * 2, otypes=[int])(x) * x)

        x = np.array([1.2, 2.7, 0.5])
        (g,) = ad.gradient(f, x)
        _close(g, (x * 2).astype(int))
        assert ad.jvp(f, (x,), (np.ones(3),))[1] == pytest.approx(np.sum((x * 2).astype(int)))

    def test_scalar_and_list_arguments(self):
        sq = np.vectorize(lambda t: t**3)
        assert check(lambda x: float(sq(x)), 2.0) == (12.0,)
        assert check(lambda x: np.sum(sq([x, 2.0 * x])), 1.5) == pytest.approx((27 * 1.5**2,))

    def test_several_outputs(self):
        split = np.vectorize(lambda t: (t * t, math.sin(t)))

        def f(x):
            a, b = split(x)
            return np.sum(a) + 2.0 * np.sum(b)

        x = np.array([0.3, 1.1])
        (g,) = check(f, x)
        _close(g, 2 * x + 2 * np.cos(x))

    def test_float32_output_keeps_numpys_dtype(self):
        v = np.vectorize(lambda t: t * np.float32(2.0))
        x = np.array([1.0, 2.0], dtype=np.float32)
        y, _ = ad.pullback(v, x)
        assert y.dtype == v(x).dtype

    def test_jacobian_calls_the_pullback_once_per_row(self):
        v = np.vectorize(lambda t, s: t * t * s + math.sin(t))
        x, s = np.array([1.0, 2.0, 3.0]), 0.5
        for mode in ("reverse", "forward"):
            Jx, Js = ad.jacobian(v, x, s, mode=mode)
            _close(Jx, np.diag(2 * x * s + np.cos(x)))
            _close(Js, x * x)

    def test_second_order_works_and_keywords_there_are_refused_clearly(self):
        cube = np.vectorize(lambda t: t**3)

        def f(x):
            return np.sum(cube(x))

        np.testing.assert_allclose(ad.hessian(f, np.array([1.0, 2.0])), np.diag([6.0, 12.0]))
        power = np.vectorize(lambda t, p=2.0: t**p)

        def g(x):
            return np.sum(power(x, p=3.0))

        with pytest.raises(ad.NoRuleError) as err:
            ad.hessian(g, np.array([1.0, 2.0]))
        assert re.search(rf"np.vectorize.*{HERE}:\d+.*positional", str(err.value), re.S)
        assert "To fix" in str(err.value)

    def test_signature_is_refused(self):
        v = np.vectorize(lambda r: np.sum(r), signature="(n)->()")

        def f(x):
            return np.sum(v(x))

        with pytest.raises(ad.NoRuleError) as err:
            ad.gradient(f, np.ones((2, 3)))
        assert re.search(rf"signature.*called at {HERE}:\d+", str(err.value), re.S)
        assert "To fix" in str(err.value)


# --- item 8: keyword arguments to the entry points ------------------------------------------


def loss(w, target=0.0, *, weight=1.0, power=2):
    return weight * np.sum((w - target) ** power)


class TestKeywords:
    def test_gradient_withgradient_pullback(self):
        w = np.array([1.0, -2.0, 0.5])
        (g,) = ad.gradient(loss, w, target=1.0, weight=0.5)
        _close(g, 0.5 * 2 * (w - 1.0))
        _close(g, fd_gradient(lambda w: loss(w, target=1.0, weight=0.5), w)[0])
        val, (g2,) = ad.withgradient(loss, w, target=1.0, weight=0.5)
        assert val == pytest.approx(loss(w, target=1.0, weight=0.5))
        _close(g2, g)
        y, back = ad.pullback(loss, w, 2.0, power=3)
        g3, g_target = back(1.0)  # target is positional here: it gets its entry
        _close(g3, 3 * (w - 2.0) ** 2)
        assert g_target == pytest.approx(-np.sum(3 * (w - 2.0) ** 2))
        assert y == pytest.approx(loss(w, 2.0, power=3))

    def test_keywords_are_not_differentiated_even_when_floats(self):
        # Only positional arguments get entries: one per argument.
        grads = ad.gradient(lambda x, scale: x * scale, 3.0, scale=5.0)
        assert grads == (5.0,)

    def test_keyword_named_like_an_api_parameter_goes_to_f(self):
        def g(x, f=2.0, args=3.0):
            return x * f * args

        assert ad.gradient(g, 1.5, f=4.0, args=0.5) == (2.0,)
        assert ad.jvp(g, (1.5,), (1.0,), f=4.0, args=0.5) == (3.0, 2.0)

    def test_kwargs_collector_and_rules(self):
        assert ad.gradient(lambda x, **kw: x * kw["a"], 2.0, a=5.0) == (5.0,)
        (g,) = ad.gradient(np.linalg.norm, np.array([3.0, 4.0]), ord=2)
        _close(g, [0.6, 0.8])
        (g,) = ad.gradient(
            lambda x, axis: np.sum(np.sum(x, axis=axis) ** 2), np.ones((2, 3)), axis=0
        )
        _close(g, np.full((2, 3), 4.0))

    def test_jacobian_and_withjacobian_with_mode(self):
        a = np.array([1.0, 2.0])
        for mode in ("auto", "reverse", "forward"):
            (J,) = ad.jacobian(lambda a, power=2: a**power, a, power=3, mode=mode)
            _close(J, np.diag(3 * a**2))
        out = ad.withjacobian(np.cumsum, [1.0, 2.0], dtype=np.float32)
        assert out.val.dtype == np.float32

    def test_jvp_and_pushforward(self):
        f = lambda x, y, c=1.0: c * x * x * y  # noqa: E731
        assert ad.jvp(f, (2.0, 3.0), (1.0, 0.0), c=0.5) == (6.0, 6.0)
        pf = ad.pushforward(f, 2.0, 3.0, c=0.5)
        assert (pf(1.0, 0.0), pf(0.0, 1.0)) == (6.0, 2.0)

    def test_hessian_and_diaghessian(self):
        x = np.array([0.5, -1.0])
        H = ad.hessian(lambda x, c: c * np.sum(x**3), x, c=2.0)
        _close(H, np.diag(12 * x))
        assert ad.hessian(loss, 1.5, target=0.5, power=3) == pytest.approx(6 * 1.0)
        d = ad.diaghessian(lambda x, y, c: c * x * x * y, 1.0, 2.0, c=3.0)
        assert d == pytest.approx((12.0, 0.0))

    def test_params_with_keywords(self):
        w = np.array([1.0, 2.0])
        grads = ad.gradient(lambda scale: scale * np.sum(w**2), ad.Params([w]), scale=3.0)
        _close(grads[w], 6 * w)

    def test_gradient_with_keywords_inside_differentiated_code(self):
        def kw(x, scale=1.0):
            return (x * scale) ** 2

        def outer(x):
            return ad.gradient(kw, x, scale=2.0)[0] * x  # 8x · x

        assert ad.gradient(outer, 3.0) == (48.0,)
        assert ad.jvp(outer, (3.0,), (1.0,)) == (72.0, 48.0)

        def outer_with(x):
            return ad.withgradient(kw, x, scale=2.0).grad[0] * x

        def outer_jvp(x):
            return ad.jvp(kw, (x,), (1.0,), scale=2.0)[1] * x

        assert ad.gradient(outer_with, 3.0) == (48.0,)
        assert ad.gradient(outer_jvp, 3.0) == (48.0,)

    def test_derivative_with_respect_to_a_keyword_of_an_inner_gradient_is_refused(self):
        def kw(x, scale=1.0):
            return (x * scale) ** 2

        with pytest.raises(Exception, match="keyword argument 'scale'"):
            ad.gradient(lambda s: ad.gradient(kw, 3.0, scale=s)[0], 2.0)

    def test_unknown_keyword_is_pythons_error(self):
        with pytest.raises(TypeError, match="unexpected keyword"):
            ad.gradient(lambda x: x * x, 1.0, nope=2.0)
