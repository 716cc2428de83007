"""Small helper functions are inlined into their caller (``ad.transform.inlining``).

Checked: the gradients and tangents of programs calling helpers (floats, arrays,
nested helpers, loops and branches inside helpers, defaults and keywords) agree
with central differences and with the same program differentiated with the
helpers left as calls, in reverse and forward mode and at second order; the
helpers are really inlined; rebinding a helper's name, registering a rule for
it, a helper that writes into what it was given, a helper's global that the
caller shadows, and recursion all keep Python's meaning.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ad_testing import fd_hessian, helpers_as_calls

import ad
from ad.transform import inlining
from rulescore import NoTangent, rrule

SCALE = 3.0


def mul(a, b):
    return a * b


def square(v):
    return v * v


def poly(x, c=2.0, d=1):
    y = c * x
    return y * x + d


def smooth_abs(x, eps=1e-3):
    if x > 0:
        r = math.sqrt(x * x + eps)
    else:
        r = math.sqrt(x * x + eps) + 0.0
    return r


def total(xs):
    s = 0.0
    for v in xs:
        s += square(v)
    return s


def scaled(x):
    return SCALE * x


def cell(h, x, W, U):
    return np.tanh(W @ h + U @ x)


def sq_norm(v):
    return np.sum(square(v))


def pow_loop_helper(x):
    r = 1.0
    for _ in range(20):
        r = mul(r, x)
    return r


def expr_helpers(x, y):
    a = poly(x, 0.5) * smooth_abs(y)
    a = a + poly(y, d=3) * scaled(x)
    return a / (1.0 + square(x))


def list_helper(x):
    return total([x, mul(x, 2.0), math.sin(x)])


def rnn_helper(W, U, xs):
    h = np.zeros(W.shape[0])
    for x in xs:
        h = cell(h, x, W, U)
    return sq_norm(h)


SCALAR = [
    (pow_loop_helper, (1.01,)),
    (expr_helpers, (0.7, -1.3)),
    (list_helper, (0.4,)),
]


def _rng_rnn():
    rng = np.random.default_rng(0)
    return rng.normal(size=(4, 4)) * 0.5, rng.normal(size=(4, 3)) * 0.5, rng.normal(size=(5, 3))


def _fd(f, args, i, h=1e-6):
    a = list(args)
    x = a[i]
    if isinstance(x, float):
        return (f(*a[:i], x + h, *a[i + 1 :]) - f(*a[:i], x - h, *a[i + 1 :])) / (2 * h)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[k] += h
        xm[k] -= h
        g[k] = (f(*a[:i], xp, *a[i + 1 :]) - f(*a[:i], xm, *a[i + 1 :])) / (2 * h)
    return g


def _calls(fn, *args):
    """``fn(*args)`` with the helpers left as calls (fresh transforms)."""
    with helpers_as_calls():
        return fn(*args)


@pytest.mark.parametrize("f,args", SCALAR, ids=[f.__name__ for f, _ in SCALAR])
def test_scalar_programs_match_differences_and_the_calls(f, args):
    g = ad.gradient(f, *args)
    for i in range(len(args)):
        assert g[i] == pytest.approx(_fd(f, args, i), rel=1e-6, abs=1e-9)
    assert g == pytest.approx(_calls(ad.gradient, f, *args), rel=1e-12)
    for i in range(len(args)):  # forward mode, one direction per argument
        ts = tuple(1.0 if j == i else 0.0 for j in range(len(args)))
        y, ẏ = ad.jvp(f, args, ts)
        assert y == pytest.approx(f(*args))
        assert ẏ == pytest.approx(g[i], rel=1e-10)


def test_the_helpers_are_inlined():
    src = ad.code_adjoint(pow_loop_helper, 1.01)
    assert "rcall(mul" not in src and "r = r * x" in src
    src = ad.code_adjoint(expr_helpers, 0.7, -1.3)
    for name in ("poly", "smooth_abs", "scaled", "square"):
        assert f"rcall({name}" not in src and f"rcall_masked(1, {name}" not in src


def test_an_array_program_in_both_modes_and_at_second_order():
    W, U, xs = _rng_rnn()
    gW, gU, _ = ad.gradient(rnn_helper, W, U, xs)
    np.testing.assert_allclose(gW, _fd(rnn_helper, (W, U, xs), 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(gU, _fd(rnn_helper, (W, U, xs), 1), rtol=1e-6, atol=1e-9)
    cW, cU, _ = _calls(ad.gradient, rnn_helper, W, U, xs)
    np.testing.assert_allclose(gW, cW, rtol=1e-12)
    dW = np.ones_like(W)
    _, ẏ = ad.jvp(rnn_helper, (W, U, xs), (dW, np.zeros_like(U), np.zeros_like(xs)))
    assert ẏ == pytest.approx(np.sum(gW * dW), rel=1e-10)

    def in_x(x):
        return expr_helpers(x[0], x[1]) + sq_norm(x)

    def positional(x):  # reverse over reverse takes positional calls only
        return sq_norm(x) * mul(x[0], square(x[1]))

    x = np.array([0.7, -1.3])
    np.testing.assert_allclose(ad.hessian(in_x, x), fd_hessian(in_x, x), rtol=1e-5, atol=1e-6)
    H = fd_hessian(positional, x)
    np.testing.assert_allclose(ad.hessian(positional, x), H, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ad.hessian_reverse(positional, x), H, rtol=1e-5, atol=1e-6)


def test_a_rebound_helper_name_is_honoured(monkeypatch):
    assert ad.gradient(pow_loop_helper, 1.5)[0] == pytest.approx(20 * 1.5**19)
    monkeypatch.setitem(globals(), "mul", lambda a, b: a + b)  # now r = 1 + 20 x
    assert ad.gradient(pow_loop_helper, 1.5)[0] == pytest.approx(20.0)
    y, ẏ = ad.jvp(pow_loop_helper, (1.5,), (1.0,))
    assert (y, ẏ) == (pytest.approx(31.0), pytest.approx(20.0))


def _rebinding():
    globals()["_flip"] = _sub  # run as plain Python: no argument carries a derivative


def _add(a, b):
    return a + b


def _sub(a, b):
    return a - b


_flip = _add


def rebinds_while_running(x):
    a = _flip(x, 1.0)
    _rebinding()
    return _flip(a, x)  # Python calls _sub here


def test_a_helper_rebound_during_the_call_is_refused_not_run_stale(monkeypatch):
    monkeypatch.setitem(globals(), "_flip", _add)
    with pytest.raises(ad.MutationError, match="'_flip' was rebound while"):
        ad.gradient(rebinds_while_running, 2.0)
    monkeypatch.setitem(globals(), "_flip", _add)
    # Left as calls, the same program is differentiated as Python runs it: (x+1) - x.
    assert _calls(ad.gradient, rebinds_while_running, 2.0) == (0.0,)


def cubed(x):
    return x * x * x


def uses_cubed(x):
    return cubed(x) + 1.0


def test_a_rule_registered_later_wins(monkeypatch):
    assert ad.gradient(uses_cubed, 2.0) == (12.0,)
    table = rrule.table._rules
    monkeypatch.setitem(table, cubed, list(table.get(cubed, [])))  # restored afterwards

    @rrule.register(cubed)
    def _(x):
        return x**3, lambda ȳ: (NoTangent(), 100.0 * ȳ)  # deliberately not 3x^2

    try:
        assert ad.gradient(uses_cubed, 2.0) == (100.0,)
    finally:
        table.pop(cubed, None)
        rrule.table._cache.clear()
        rrule.table.listeners[-1]()


def write_first(v, x):
    v[0] = x
    return v


def grows(xs, x):
    xs.append(x * 2.0)
    return x


def writes_args(x):
    v = [0.0, 1.0]
    w = write_first(v, x)
    xs = [x]
    y = grows(xs, x)
    return v[0] * w[1] + xs[1] * y + sum(xs)


MEMO = {}


def memo(x):
    MEMO["last"] = x
    return x * 2.0


def test_helpers_writing_what_they_were_given_stay_calls():
    # v[0] * w[1] + xs[1] * y + sum(xs) = x * 1 + 2x * x + x + 2x
    assert "rcall(write_first" in ad.code_adjoint(writes_args, 0.5)
    assert ad.gradient(writes_args, 0.5)[0] == pytest.approx(1 + 4 * 0.5 + 1 + 2)
    assert ad.gradient(writes_args, 0.5)[0] == pytest.approx(_fd(writes_args, (0.5,), 0))
    assert inlining.helper_anf(write_first) is None
    assert inlining.helper_anf(grows) is None
    assert inlining.helper_anf(memo) is None  # writes a global: the callee's to follow
    assert inlining.helper_anf(total) is not None  # s += ... on its own number


def uses_global_scale(x):
    return scaled(x)


def shadows_scale(x, SCALE):
    return scaled(x) * SCALE


def test_a_global_the_caller_shadows_keeps_the_helper_a_call():
    # scaled reads the global SCALE (3.0); inlined into a function with a local
    # SCALE it would read that instead.
    assert ad.gradient(shadows_scale, 2.0, 5.0) == (15.0, 6.0)
    assert ad.gradient(uses_global_scale, 2.0) == (3.0,)


def fact(n, x):
    if n == 0:
        return 1.0
    return x * fact(n - 1, x)


def test_recursion_is_differentiated_as_calls():
    assert ad.gradient(fact, 5, 1.5)[1] == pytest.approx(5 * 1.5**4)


def faulty(x):
    y = x * 2.0
    raise ValueError(f"boom at {y}")  # the line a traceback must show


def calls_faulty(x):
    return faulty(x) + 1.0


def test_an_error_in_an_inlined_helper_shows_the_helpers_line():
    with pytest.raises(ValueError, match="boom") as info:
        ad.gradient(calls_faulty, 1.0)
    line = faulty.__code__.co_firstlineno + 2
    assert info.traceback[-1].lineno + 1 == line
