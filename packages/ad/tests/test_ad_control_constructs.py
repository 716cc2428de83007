"""try/except/else/finally, with, the walrus operator and match, in both modes.

Each program is checked against central differences in reverse mode
(``ad.gradient``) and in forward mode (``ad.jvp`` along fixed tangents), its
value against plain Python; a few against derivatives worked out by hand, and
each construct once at second order. The derivative must follow exactly the
statements that ran: an exception part-way through a ``try`` body (or a
``with`` body whose context manager suppresses it) skips the rest. What the
transform cannot replay is a clear error naming the file and line.
"""

from __future__ import annotations

import contextlib
import enum
import io
import math
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from ad_testing import fd_gradient, fd_hessian

import ad
from ad.transform import adjoint_source

HERE = __file__


def _tangents(args: tuple) -> tuple:
    rng = np.random.default_rng(7)
    return tuple(
        float(rng.uniform(0.5, 1.5)) if isinstance(a, float) else rng.uniform(0.5, 1.5, np.shape(a))
        for a in args
    )


def check(f, *args, rtol=1e-5, atol=1e-6):
    """Reverse and forward mode against central differences; the values against Python."""
    expected = f(*args)
    fd = fd_gradient(f, *args)
    value, grads = ad.withgradient(f, *args)
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    assert len(grads) == len(args)
    for g, e in zip(grads, fd):
        g = 0.0 if g is None else g  # an argument nothing differentiable depends on
        np.testing.assert_allclose(np.asarray(g, dtype=float), e, rtol=rtol, atol=atol)
    ts = _tangents(args)
    y, ẏ = ad.jvp(f, args, ts)
    np.testing.assert_allclose(y, expected, rtol=1e-12)
    directional = sum(float(np.sum(np.asarray(e) * np.asarray(t))) for e, t in zip(fd, ts))
    np.testing.assert_allclose(float(ẏ), directional, rtol=rtol, atol=atol)


# --- try / except / else / finally ----------------------------------------------------


def log_or_square(x):
    y = x * 2.0
    try:
        z = math.log(x - 1.0)  # ValueError for x <= 1: y keeps 2x
        y = y * z
    except ValueError:
        y = y * x
    return y


def explicit_raise_midway(x):
    y = x
    try:
        y = y * x  # runs
        if x > 1.0:
            raise RuntimeError("too big")
        y = y * 10.0  # skipped when raised
    except RuntimeError:
        y = y + x**3
    return y


def handler_binds_exception(x):
    try:
        if x < 0:
            raise ValueError(x * 2.0)
        out = math.sqrt(x)
    except ValueError as e:
        out = x * x + len(str(e)) * 0.0
    return out


def several_handlers(x, k):
    try:
        if k > 0.5:
            return {"a": x}["b"]  # KeyError
        return [x][int(k) + 3]  # IndexError
    except KeyError:
        return x * 3.0
    except (IndexError, TypeError):
        return x * x * k


def else_and_finally(x):
    log = [x]
    try:
        y = np.sin(x)
    except FloatingPointError:
        y = 0.0
    else:
        y = y * x  # no exception: runs
    finally:
        log.append(y * 2.0)
    return log[1] + log[0]


def finally_after_exception(x):
    y = x
    try:
        try:
            y = y * y
            raise KeyError
        finally:
            y = y + x  # runs before the outer handler
    except KeyError:
        y = y * 3.0
    return y


def return_inside_try_finally(x):
    try:
        return x * x  # the value is taken before finally runs
    finally:
        x = 100.0


def else_skipped_by_return(x):
    try:
        if x > 0:
            return x * 4.0
    except ValueError:
        pass
    else:
        x = x * 100.0  # runs only when the body did not return
    return x * x


def nested_try(x):
    y = x
    try:
        try:
            y = y * x
            if x > 0:
                raise ValueError("pos")
            y = y + 1.0
        except KeyError:
            y = 0.0
        finally:
            y = y * 3.0
        y = y + x
    except ValueError:
        y = y + x * x
    else:
        y = y - x
    finally:
        y = y * 2.0
    return y


def reraised_to_outer(x):
    y = x
    try:
        try:
            y = math.exp(y)
            math.log(-y)
        except ValueError:
            y = y * x
            raise
    except ValueError:
        y = y + x
    return y


def raise_from(x):
    try:
        try:
            {}[x]
        except KeyError as e:
            raise LookupError("missing") from e
    except LookupError:
        return x * 5.0
    return x


def try_in_loop(x):
    total = 0.0
    for i in range(4):
        try:
            if i % 2:
                total = total + math.log(x - i)  # fails for x <= i
            else:
                total = total + x * i
        except ValueError:
            total = total - x
    return total


def try_in_while_with_break_and_continue(x):
    k, y = 0, x
    while k < 6:
        k += 1
        try:
            if k == 2:
                continue
            y = y * 1.3
            if y > 5.0:
                break
            y = y + math.sqrt(y - 1.5)  # ValueError while y < 1.5
        except ValueError:
            y = y + 0.25 * x
            continue
        finally:
            y = y + 0.01 * k
    return y


def loop_in_try_completes(x):
    s = 0.0
    try:
        for i in range(3):
            s = s + x * i
        if s > 1.0:
            raise ArithmeticError
    except ArithmeticError:
        s = s * x
    return s


def try_in_callee_helper(v):
    try:
        return math.acos(v)
    except ValueError:
        return 0.5 * v * v


def calls_helper_with_try(x):
    return try_in_callee_helper(x) + try_in_callee_helper(x * 3.0)


def arrays_fallback(x):
    try:
        y = np.sum(x**2)
        if y > 10:
            raise ArithmeticError
        out = y * np.sum(x)
    except ArithmeticError:
        out = np.sum(np.sin(x) * x)
    return out


def bare_except_with_arrays(w, x):
    try:
        z = np.linalg.cholesky(np.diag(w)) @ x  # LinAlgError when some w <= 0
        out = np.sum(z * z)
    except:  # noqa: E722
        out = np.sum(w * x) ** 2
    return out


def helper_builds_its_own_list(xs):
    out = []
    for v in xs:
        out.append(math.sqrt(v))  # may raise: the list is this function's own
    return sum(out)


def catches_from_helper(x):
    try:
        r = helper_builds_its_own_list([x, x - 2.0, 3.0 * x])
    except ValueError:
        r = x * x
    return r


def comprehension_with_fallback(x):
    xs = [x, x - 2.0, 3.0 * x]
    try:
        ys = [math.log(v) for v in xs]  # may fail part-way: ys is replaced
    except ValueError:
        ys = [x * x]
    return sum(ys)


def loop_left_part_way_result_discarded(x):
    s = x
    try:
        for i in range(3):
            s = s * math.log(x - i)
    except ValueError:
        s = x**3  # nothing the part-run loop computed is used
    return s


TRY_CASES = [
    (comprehension_with_fallback, (3.0,)),
    (comprehension_with_fallback, (1.0,)),
    (loop_left_part_way_result_discarded, (1.5,)),
    (loop_left_part_way_result_discarded, (3.5,)),
    (log_or_square, (3.0,)),
    (log_or_square, (0.5,)),
    (explicit_raise_midway, (2.0,)),
    (explicit_raise_midway, (0.5,)),
    (handler_binds_exception, (-1.5,)),
    (handler_binds_exception, (2.0,)),
    (several_handlers, (1.5, 0.75)),
    (several_handlers, (1.5, 0.25)),
    (else_and_finally, (0.7,)),
    (finally_after_exception, (1.3,)),
    (return_inside_try_finally, (1.7,)),
    (else_skipped_by_return, (1.5,)),
    (else_skipped_by_return, (-1.5,)),
    (nested_try, (2.0,)),
    (nested_try, (-2.0,)),
    (reraised_to_outer, (0.4,)),
    (raise_from, (1.25,)),
    (try_in_loop, (2.5,)),
    (try_in_loop, (0.5,)),
    (try_in_while_with_break_and_continue, (1.2,)),
    (try_in_while_with_break_and_continue, (2.2,)),
    (loop_in_try_completes, (3.0,)),
    (loop_in_try_completes, (0.1,)),
    (calls_helper_with_try, (0.2,)),
    (calls_helper_with_try, (0.5,)),
    (arrays_fallback, (np.array([1.0, 2.0]),)),
    (arrays_fallback, (np.array([3.0, 2.0]),)),
    (bare_except_with_arrays, (np.array([1.0, 2.0]), np.array([0.5, 1.5]))),
    (bare_except_with_arrays, (np.array([1.0, -2.0]), np.array([0.5, 1.5]))),
    (catches_from_helper, (3.0,)),
    (catches_from_helper, (1.0,)),
]


@pytest.mark.parametrize("f, args", TRY_CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_try(f, args):
    check(f, *args)


def test_try_derivatives_by_hand():
    # x > 1: y = 2x log(x - 1) -> 2 log(x - 1) + 2x / (x - 1)
    x = 3.0
    assert ad.gradient(log_or_square, x)[0] == pytest.approx(2 * math.log(2.0) + 2 * x / 2.0)
    # x <= 1: log raised after y = 2x; handler y = 2x * x -> 4x
    assert ad.gradient(log_or_square, 0.5)[0] == pytest.approx(2.0)
    # x > 1: y = x^2 (the raise skipped y*10), then + x^3 -> 2x + 3x^2
    assert ad.gradient(explicit_raise_midway, 2.0)[0] == pytest.approx(4.0 + 12.0)
    assert ad.jvp(explicit_raise_midway, (2.0,), (1.0,))[1] == pytest.approx(16.0)
    # x > 0: (x^2 * 3 + x^2) * 2 = 8x^2 -> 16x (inner else and `y + 1` skipped)
    assert ad.gradient(nested_try, 2.0)[0] == pytest.approx(32.0)
    assert ad.jvp(nested_try, (2.0,), (1.0,)) == pytest.approx((32.0, 32.0))


def test_finally_and_else_run_as_in_python():
    assert ad.withgradient(return_inside_try_finally, 3.0) == (9.0, (6.0,))
    # the body returned: else did not run
    assert ad.withgradient(else_skipped_by_return, 2.0) == (8.0, (4.0,))
    # no exception and no return: else ran (x * 100)^2
    assert ad.gradient(else_skipped_by_return, -1.0)[0] == pytest.approx(-20000.0)


def test_try_inside_a_loop_with_arrays_accumulates_each_iteration():
    def f(x):
        acc = np.zeros(2)
        for i in range(5):
            try:
                if i == 3:
                    raise IndexError
                acc = acc + x * i
            except IndexError:
                acc = acc * x
        return np.sum(acc)

    check(f, np.array([0.5, 1.5]))


def closure_in_try(x):
    y = x * 2.0
    try:
        g = lambda t: t * y  # noqa: E731
        r = g(x)
        if x > 1:
            raise ValueError
    except ValueError:
        r = r + g(1.0)
    return r


def test_closures_defined_in_a_try_body():
    check(closure_in_try, 2.0)
    check(closure_in_try, 0.5)

    def rebound_by_the_handler(x):
        y = x * 2.0
        try:
            g = lambda t: t * y  # noqa: E731  CLOSURE-IN-TRY
            raise ValueError
        except ValueError:
            y = x * x  # the closure sees this y
        return g(1.0)

    with pytest.raises(ad.UnsupportedSyntaxError, match="captures 'y'") as e:
        ad.gradient(rebound_by_the_handler, 2.0)
    _refused(e, "CLOSURE-IN-TRY")


def test_adjoint_source_shows_try_and_with():
    def f(x):
        try:
            y = x * x
        except ValueError:
            y = x
        finally:
            x = 0.0
        with contextlib.suppress(KeyError):
            y = y * 2.0
        return y

    src = adjoint_source(f)
    for part in ("try:", "except ValueError:", "finally:", "_ad_t1 = contextlib.suppress"):
        assert part in src
    assert "\n    with _ad_t" in src
    assert ad.gradient(f, 3.0) == (12.0,)


# --- with ---------------------------------------------------------------------------


class Recorder:
    """A user context manager: __enter__ returns a constant, __exit__ records."""

    def __init__(self):
        self.events = []

    def __enter__(self):
        self.events.append("enter")
        return 5.0

    def __exit__(self, *exc):
        self.events.append("exit")
        return False


@contextlib.contextmanager
def tagged(tag):
    yield tag


def errstate_where(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(x > 0, np.log(np.abs(x)), 0.0)
    return np.sum(y * x)


def suppress_midway(x):
    y = x * 2.0
    with contextlib.suppress(ValueError):
        y = y * x
        z = math.log(-x)  # raises for x > 0: the rest of the body is skipped
        y = y + z
    return y


def user_manager_and_several_items(x):
    rec = Recorder()
    with rec as five, contextlib.suppress(KeyError) as _:
        y = x * five
    return y + len(rec.events)


def generator_manager(x):
    with tagged("cube") as t:
        y = x**3 if t == "cube" else x
    return y


def open_like(x):
    with io.StringIO("2.5") as fh:
        c = float(fh.read())
    return c * x * x


def return_inside_with(x):
    with contextlib.suppress(ZeroDivisionError):
        return x / (x - 1.0)
    return x * 10.0


def with_in_loop(x):
    s = 0.0
    for i in range(3):
        with contextlib.suppress(ValueError):
            s = s + x * i
            if i == 1:
                raise ValueError
            s = s + x**2
    return s


def with_tuple_target(x):
    with contextlib.nullcontext((2.0, 3.0)) as (a, b):
        y = a * x + b * x * x
    return y


def nested_with_and_try(w, x):
    with np.errstate(all="ignore"):
        try:
            with contextlib.suppress(np.linalg.LinAlgError):
                z = np.linalg.cholesky(np.diag(w)) @ x  # LinAlgError when some w <= 0
                w = w * 2.0
            out = np.sum(z * w)
        except NameError:  # z unbound when cholesky raised (w not doubled)
            out = np.sum(w * w)
    return out


class Scaled:
    """__enter__ returns a value computed from the manager's field."""

    def __init__(self, v):
        self.v = v

    def __enter__(self):
        return 2.0 * self.v

    def __exit__(self, *exc):
        return False


class Holder:
    """__enter__ returns the manager itself; __exit__ writes it."""

    def __init__(self, w):
        self.w = w
        self.exits = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.exits += 1
        return False


def enter_value_from_fields(x):
    with Scaled(x * x) as t:
        return t * x  # 2x³


def enter_returns_self(w, x):
    with Holder(w * x) as h:
        y = h.w * w
    return y + h.exits  # w²x + 1


WITH_CASES = [
    (enter_value_from_fields, (1.5,)),
    (enter_returns_self, (0.7, 1.3)),
    (errstate_where, (np.array([1.0, 2.0, 3.0]),)),
    (suppress_midway, (3.0,)),
    (suppress_midway, (-3.0,)),
    (user_manager_and_several_items, (2.0,)),
    (generator_manager, (1.5,)),
    (open_like, (1.5,)),
    (return_inside_with, (3.0,)),
    (with_in_loop, (1.3,)),
    (with_tuple_target, (0.7,)),
    (nested_with_and_try, (np.array([1.0, 2.0]), np.array([0.5, 1.5]))),
    (nested_with_and_try, (np.array([-1.0, 2.0]), np.array([0.5, 1.5]))),
]


@pytest.mark.parametrize("f, args", WITH_CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_with(f, args):
    check(f, *args)


class Doubling:
    """__enter__ writes its object, then returns it."""

    def __init__(self, v):
        self.v = v

    def __enter__(self):
        self.v = self.v * 2.0
        return self

    def __exit__(self, *exc):
        return False


def enter_writes_self(x):
    with Doubling(x * x) as d:
        return d.v * x  # 2x³


def test_an_enter_that_writes_its_object():
    assert ad.gradient(enter_writes_self, 1.3)[0] == pytest.approx(6 * 1.3**2)
    assert ad.jvp(enter_writes_self, (1.3,), (1.0,))[1] == pytest.approx(6 * 1.3**2)
    # at second order the write was lost (a wrong number): refused, naming the line
    with pytest.raises(ad.MutationError, match=r"test_ad_control_constructs\.py:\d+: .*writes"):
        ad.hessian(enter_writes_self, 1.3)


def test_with_derivatives_by_hand():
    # __enter__'s value carries the derivative of what built the manager: it gave
    # 1.69-style halves before (the value was a constant)
    assert ad.gradient(enter_value_from_fields, 1.5) == (pytest.approx(6 * 1.5**2),)
    assert ad.jvp(enter_value_from_fields, (1.5,), (1.0,))[1] == pytest.approx(6 * 1.5**2)
    g = ad.gradient(enter_returns_self, 0.7, 1.3)
    assert g == (pytest.approx(2 * 0.7 * 1.3), pytest.approx(0.7**2))
    # x > 0: y = 2x * x, the log raised, suppressed -> 4x
    assert ad.gradient(suppress_midway, 3.0) == (12.0,)
    assert ad.jvp(suppress_midway, (3.0,), (1.0,)) == (18.0, 12.0)
    # x == 1: the division raised before the return, suppressed: 10x
    assert ad.withgradient(return_inside_with, 1.0) == (10.0, (10.0,))
    # i = 0: x^2; i = 1: x (raise); i = 2: 2x + x^2 -> s = 3x + 2x^2
    assert ad.gradient(with_in_loop, 2.0)[0] == pytest.approx(3.0 + 4.0 * 2.0)


def test_the_context_manager_runs_as_plain_python():
    rec = Recorder()

    def f(x):
        with rec as five:
            y = x * five
        return y

    assert ad.gradient(f, 2.0) == (5.0,)
    assert ad.jvp(f, (2.0,), (1.0,)) == (10.0, 5.0)
    assert rec.events == ["enter", "exit"] * 2


# --- walrus ---------------------------------------------------------------------------


def walrus_in_condition(x):
    if (y := x * x) > 4.0:
        return y * x
    return y + 1.0


def walrus_in_expressions(x):
    z = (a := x + 1.0) * (b := a * x) + a
    return z + b


def walrus_reads_before_rebinding(x):
    # Python reads x, then the walrus rebinds it: x * 3x + 3x
    return x * (x := x * 3.0) + x


def walrus_twice_in_one_expression(x):
    return (x := 2.0 * x) + (x := x * x)


def walrus_in_comprehension(xs):
    total = 0.0
    ys = [(total := total + v * v) for v in xs]  # binds total in this function
    return total + ys[0]


def walrus_in_comprehension_filter(x):
    vals = [y for v in [x, 2.0 * x, -x] if (y := v * v) > 1.0]
    return sum(vals) + y


def walrus_in_while(x):
    n = 0
    while (x := x * 0.5) > 0.1:
        n += 1
    return x * n


def walrus_with_arrays(x):
    if (s := np.sum(x**2)) > 1:
        return s * np.sum(x)
    return s


def walrus_in_and(x):
    if (a := x - 1.0) > 0 and (b := a * x) > 0.5:
        return a * b
    return a


def comprehension_scope(v):
    # The loop variables are the comprehension's own; the walrus binds out here.
    x = v * 2.0
    ys = [x * 3.0 for x in [1.0, 2.0]]
    rows = [[v, 2.0 * v], [3.0, v * v]]
    out = [[x * y for x in row] for row in rows for y in [row[0]]]
    fs = [lambda x: x * v for x in range(2)]
    zs = [(last := x * v) for x in [1.0, 2.0]]
    return x + ys[0] + out[0][1] + out[1][1] + fs[0](3.0) + last + zs[0]


WALRUS_CASES = [
    (comprehension_scope, (1.5,)),
    (walrus_in_condition, (3.0,)),
    (walrus_in_condition, (1.0,)),
    (walrus_in_expressions, (1.7,)),
    (walrus_reads_before_rebinding, (1.3,)),
    (walrus_twice_in_one_expression, (1.3,)),
    (walrus_in_comprehension, (np.array([1.0, 2.0, 3.0]),)),
    (walrus_in_comprehension_filter, (1.5,)),
    (walrus_in_while, (3.0,)),
    (walrus_with_arrays, (np.array([0.5, 1.5]),)),
    (walrus_in_and, (2.0,)),
    (walrus_in_and, (0.5,)),
]


@pytest.mark.parametrize("f, args", WALRUS_CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_walrus(f, args):
    check(f, *args)


def test_walrus_derivatives_by_hand():
    # 3x^2 + 3x -> 6x + 3
    assert ad.withgradient(walrus_reads_before_rebinding, 2.0) == (18.0, (15.0,))
    # 2x + 4x^2 -> 2 + 8x
    assert ad.withgradient(walrus_twice_in_one_expression, 1.0) == (6.0, (10.0,))
    assert ad.jvp(walrus_twice_in_one_expression, (1.0,), (1.0,)) == (6.0, 10.0)
    # x = 2v, ys[0] = 3, 2v^2 + 3v^2, fs[0](3) = 3v, last = 2v, zs[0] = v: 8 + 10v
    assert ad.gradient(comprehension_scope, 1.5)[0] == pytest.approx(2 + 10 * 1.5 + 3 + 2 + 1)


# --- match ----------------------------------------------------------------------------


@dataclass
class Point:
    x: float
    y: float


class Polar:
    __match_args__ = ("r", "theta")

    def __init__(self, r, theta):
        self.r = r
        self.theta = theta


def match_sequence_with_guard(x, y):
    match (x, y):
        case (a, b) if a > 0:
            return a * b
        case (a, b):
            return a - b


def match_class(x, y):
    match Point(x, y):
        case Point(x=0.0):
            return y
        case Point(x=a, y=b) if b > a:
            return a * b * b
        case Point(a, b):
            return a + b


def match_match_args(r, t):
    match Polar(r, t):
        case Polar(radius, angle) if radius > 0:
            return radius * math.cos(angle)
    return 0.0


def match_literals_and_or(x):
    n = 2
    match n:
        case 1:
            return x
        case 2 | 3:
            return x * x
        case _:
            return 0.0


def match_star(x):
    match [x, 2.0 * x, 3.0 * x, x * x]:
        case [first, *middle, last]:
            return first * last + sum(middle)
    return 0.0


def match_mapping_rest(x):
    match {"a": x, "b": x * x, "c": 3.0}:
        case {"a": a, "b": b, **rest}:
            return a * b + rest["c"] * a
    return 0.0


def match_or_binding(x):
    t = ("neg", x) if x < 0 else ("pos", x * 2.0)
    match t:
        case ("neg", v) | ("pos", v):
            return v * v
    return 0.0


def match_builtin_classes(x):
    match x:
        case int():
            return 0.0
        case float(v) if v > 0:
            return v**3
        case float(v):
            return -v
    return 1.0


def match_nested_in_loop(x):
    total = 0.0
    for item in [(x, (2.0, x * x)), (1.0, (x, 3.0)), "skip"]:
        match item:
            case (a, (b, c)):
                total = total + a * b * c
            case str():
                total = total * 2.0
    return total


def match_array_subject(x):
    match x:
        case [a, b]:  # a numpy array is no Sequence for match
            return a * b
        case np.ndarray(shape=(2,)):
            return np.sum(x**2)
    return 0.0


def match_none_and_as(x, flag=None):
    match flag:
        case None:
            pass
        case _:
            return x
    match (x, x * 2.0):
        case (a, b) as pair:
            return a * b + pair[0]


def match_break_continue(x):
    s = 0.0
    for i in range(5):
        match i:
            case 3:
                break
            case 1:
                continue
            case _:
                s = s + x**i
    return s


def match_guard_with_walrus(x):
    match [x, x + 1.0]:
        case [a, b] if (p := a * b) > 1.0:
            return p * a
        case _:
            return x


MATCH_CASES = [
    (match_sequence_with_guard, (2.0, 3.0)),
    (match_sequence_with_guard, (-2.0, 3.0)),
    (match_class, (1.0, 2.0)),
    (match_class, (3.0, 2.0)),
    (match_match_args, (2.0, 0.3)),
    (match_literals_and_or, (1.7,)),
    (match_star, (1.3,)),
    (match_mapping_rest, (1.2,)),
    (match_or_binding, (1.5,)),
    (match_or_binding, (-1.5,)),
    (match_builtin_classes, (1.5,)),
    (match_builtin_classes, (-1.5,)),
    (match_nested_in_loop, (1.1,)),
    (match_array_subject, (np.array([1.0, 2.0]),)),
    (match_none_and_as, (1.5,)),
    (match_break_continue, (1.5,)),
    (match_guard_with_walrus, (1.5,)),
    (match_guard_with_walrus, (0.2,)),
]


@pytest.mark.parametrize("f, args", MATCH_CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_match(f, args):
    check(f, *args)


def test_match_derivatives_by_hand():
    # case (a, b): a * b
    assert ad.gradient(match_sequence_with_guard, 2.0, 3.0) == (3.0, 2.0)
    assert ad.jvp(match_sequence_with_guard, (2.0, 3.0), (1.0, 0.0)) == (6.0, 3.0)
    # Point(x=a, y=b) with b > a: a b^2
    assert ad.gradient(match_class, 1.0, 2.0) == (4.0, 4.0)
    # first * last + sum(middle) = x^3 + 5x -> 3x^2 + 5
    assert ad.gradient(match_star, 2.0)[0] == pytest.approx(17.0)


class Color(enum.Enum):
    RED = 1
    BLUE = 2


def classify(subject, x):
    """One match statement with many kinds of patterns, each case a distinct
    function of ``x`` (so both the case taken and the derivative are checked)."""
    match subject:
        case []:
            return x
        case {}:
            return 2.0 * x
        case "text":
            return 3.0 * x
        case str(s):
            return len(s) * x
        case Color.RED:
            return x**2
        case [Color.BLUE, *_]:
            return x**3
        case {"k": [a, *_], **others} if not others:
            return a * x
        case {"k": v}:
            return v * x * 10.0
        case Point(x=0.0, y=yy) | Point(x=yy, y=0.0):
            return yy * x
        case Point(z=zz):  # no attribute z: never matches
            return zz
        case (1 | 2) as n:
            return n * x * x
        case [[a, b], c] if a < b:
            return a * b * c * x
        case [_, _, *rest] if len(rest) == 2:
            return rest[0] * rest[1] * x
        case _:
            return -x


SUBJECTS = [
    [],
    {},
    "text",
    "other",
    Color.RED,
    [Color.BLUE],
    {"k": [2.0, 9.0]},
    {"k": [2.0], "j": 1.0},
    {"k": 3.0},
    Point(0.0, 4.0),
    Point(5.0, 0.0),
    Point(1.0, 1.0),
    2,
    3,
    [[1.0, 2.0], 3.0],
    [[2.0, 1.0], 3.0],
    (1.0, 2.0, 3.0, 4.0),
    (1.0, 2.0, 3.0),
    np.float64(2.5),
]


@pytest.mark.parametrize("k", range(len(SUBJECTS)))
def test_match_takes_the_case_python_takes(k):
    def f(x):
        return classify(SUBJECTS[k], x)

    check(f, 1.7)


def test_match_refuses_what_python_refuses():
    # `case "text"` compares an array elementwise, and its truth is ambiguous
    with pytest.raises(ValueError, match="truth value of an array"):
        classify(np.array([1.0, 2.0]), 1.0)
    with pytest.raises(ValueError, match="truth value of an array"):
        ad.gradient(lambda x: classify(np.array([1.0, 2.0]), x), 1.0)

    def too_many(x):
        match Polar(x, 1.0):
            case Polar(a, b, c):
                return a + b + c
        return x

    with pytest.raises(TypeError, match=r"Polar\(\) accepts 2 positional sub-patterns \(3 given\)"):
        too_many(1.0)
    with pytest.raises(TypeError, match=r"Polar\(\) accepts 2 positional sub-patterns \(3 given\)"):
        ad.gradient(too_many, 1.0)
    with pytest.raises(TypeError, match=r"Polar\(\) accepts 2 positional sub-patterns \(3 given\)"):
        ad.jvp(too_many, (1.0,), (1.0,))


# --- second order: one per construct --------------------------------------------------


def second_try(x):
    y = x[0] * x[1]
    try:
        y = y * math.log(x[0] - 2.0)  # ValueError at x[0] = 1.5: skipped
    except ValueError:
        y = y * x[1] ** 2
    finally:
        y = y + x[0] ** 3
    return y


def second_try_in_loop(x):
    s = x[0]
    for i in range(3):
        try:
            s = s * x[1] + math.sqrt(x[0] - i)
        except ValueError:
            s = s - x[1] ** 2
    return s


def second_with(x):
    with contextlib.suppress(ArithmeticError):
        s = x[0] * x[1]
        if s > 0.5:
            raise ArithmeticError
        s = s * 10.0
    return s * s * x[1]


def second_walrus(x):
    if (q := x[0] * x[1]) > 0:
        return q * q * x[0]
    return q


def second_match(x):
    match (x[0], x[1]):
        case (a, b) if a > 0:
            return a * a * b
        case (a, b):
            return b


@pytest.mark.parametrize(
    "f", [second_try, second_try_in_loop, second_with, second_walrus, second_match]
)
def test_second_order(f):
    x = np.array([1.5, 0.7])
    expected = fd_hessian(f, x)
    np.testing.assert_allclose(ad.hessian(f, x), expected, atol=1e-5)
    np.testing.assert_allclose(ad.hessian_reverse(f, x), expected, atol=1e-5)

    def first_partial(x):
        return ad.gradient(f, x)[0][0]

    np.testing.assert_allclose(ad.gradient(first_partial, x)[0], expected[0], atol=1e-5)


# --- what stays refused: clear errors with the file, the line and a fix ---------------


def _refused(excinfo, line_of: str) -> None:
    """The message names this file, the line of ``line_of`` in it, and a fix."""
    lines = Path(HERE).read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if line_of in text)
    assert f"{HERE}:{line}" in str(excinfo.value)
    assert "To fix" in str(excinfo.value)


def exception_leaves_a_loop(x):
    s = 0.0
    try:
        for i in range(3):  # LOOP-LEFT-PART-WAY
            s = s + math.log(x - i)
    except ValueError:
        s = s + 1.0
    return s


def test_an_exception_leaving_a_loop_part_way_is_refused_in_reverse_mode():
    with pytest.raises(ad.UnsupportedSyntaxError, match="cannot replay part of a loop") as e:
        ad.gradient(exception_leaves_a_loop, 1.5)
    _refused(e, "# LOOP-LEFT-PART-WAY")
    # the whole loop ran: fine
    check(exception_leaves_a_loop, 3.5)
    # forward mode follows what ran exactly
    y, ẏ = ad.jvp(exception_leaves_a_loop, (1.5,), (1.0,))
    assert y == pytest.approx(exception_leaves_a_loop(1.5))
    assert ẏ == pytest.approx(1.0 / 1.5 + 1.0 / 0.5)  # log(x) + log(x - 1) + 1


def loop_left_part_way_inside_a_loop(x):
    s = 0.0
    for j in range(2):
        try:
            for i in range(3):  # INNER-LOOP-LEFT
                s = s + math.log(x - i + j)
        except ValueError:
            s = x  # discarded, but the tape of the inner loop is shared by both j
    return s


def test_inside_a_loop_a_loop_left_part_way_is_refused_even_when_unused():
    with pytest.raises(ad.UnsupportedSyntaxError, match="move the try out of the loop") as e:
        ad.gradient(loop_left_part_way_inside_a_loop, 1.5)
    _refused(e, "# INNER-LOOP-LEFT")
    check(loop_left_part_way_inside_a_loop, 3.5)


def an_object_written_in_a_loop_left_part_way(x):
    rec = Recorder()
    rec.total = 0.0
    alias = rec
    try:
        for i in range(3):
            rec.total = rec.total + math.log(x - i)  # OBJECT-LOOP
    except ValueError:
        pass
    return x + alias.total  # reads what the part-run loop wrote, through another name


def test_a_loop_left_part_way_that_wrote_an_object_is_refused():
    with pytest.raises(ad.UnsupportedSyntaxError, match="cannot replay part of a loop") as e:
        ad.gradient(an_object_written_in_a_loop_left_part_way, 1.5)
    assert "in an_object_written_in_a_loop_left_part_way" in str(e.value)


def suppressed_in_loop(x):
    s = x
    with contextlib.suppress(ValueError):
        while s < 100.0:  # SUPPRESSED-IN-LOOP
            s = s * math.log(s - 1.0)
    return s


def test_a_loop_a_context_manager_leaves_part_way_is_refused():
    with pytest.raises(ad.UnsupportedSyntaxError, match="suppressed it") as e:
        ad.gradient(suppressed_in_loop, 1.5)
    _refused(e, "# SUPPRESSED-IN-LOOP")


def writes_then_raises(buf, v):
    buf[0] = v * 2.0
    if v > 0:
        raise ValueError("after the write")  # WRITE-THEN-RAISE
    return buf


def catches_after_a_write(x):
    buf = [0.0, 1.0]
    try:
        buf = writes_then_raises(buf, x)
    except ValueError:
        pass
    return buf[0] * x


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_an_exception_after_a_write_into_a_callers_object_is_refused(mode):
    with pytest.raises(ad.UnsupportedSyntaxError, match="written into an object or") as e:
        if mode == "reverse":
            ad.gradient(catches_after_a_write, 3.0)
        else:
            ad.jvp(catches_after_a_write, (3.0,), (1.0,))
    _refused(e, "# WRITE-THEN-RAISE")
    check(catches_after_a_write, -3.0)  # no exception: fine


def test_ad_errors_are_never_swallowed_by_a_handler_or_a_context_manager():
    def caught(x):
        try:
            y = np.frombuffer(np.array([x, 1.0]))[0]  # reads raw bytes: no rule
        except Exception:
            y = x
        return y

    def suppressed(x):
        y = x
        with contextlib.suppress(Exception):
            y = np.frombuffer(np.array([x, 1.0]))[0]
        return y

    for f in (caught, suppressed):
        with pytest.raises(ad.NoRuleError):
            ad.gradient(f, 2.0)
        with pytest.raises(ad.NoRuleError):
            ad.jvp(f, (2.0,), (1.0,))


def returns_in_finally(x):
    try:
        x = math.log(x)
    finally:
        return x  # noqa: B012  RETURN-IN-FINALLY


def breaks_in_finally(x):
    for _ in range(3):
        try:
            x = x * 2.0
        finally:
            break  # noqa: B012  BREAK-IN-FINALLY
    return x


def generator(x):
    yield x * 2.0  # YIELD-HERE


def delegating(x):
    yield from [x]  # YIELD-FROM-HERE


async def coroutine(x):  # ASYNC-DEF-HERE
    return x


@pytest.mark.parametrize(
    "f, marker",
    [
        (returns_in_finally, "RETURN-IN-FINALLY"),
        (breaks_in_finally, "BREAK-IN-FINALLY"),
        (generator, "# YIELD-HERE"),
        (delegating, "# YIELD-FROM-HERE"),
        (coroutine, "# ASYNC-DEF-HERE"),
    ],
)
def test_refused_syntax_names_the_line_and_a_fix(f, marker):
    for run in (lambda: ad.gradient(f, 1.0), lambda: ad.jvp(f, (1.0,), (1.0,))):
        with pytest.raises(ad.UnsupportedSyntaxError) as e:
            run()
        _refused(e, marker)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="except* is Python 3.11 syntax")
def test_except_star_is_refused_with_its_line(tmp_path, monkeypatch):
    source = textwrap.dedent(
        """
        def grouped(x):
            try:
                y = x * 2.0
            except* ValueError:
                y = x
            return y
        """
    )
    (tmp_path / "star_module.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    import star_module

    with pytest.raises(ad.UnsupportedSyntaxError, match=r"star_module.py:3: .*To fix"):
        ad.gradient(star_module.grouped, 1.0)
