"""The lean paths for common numpy calls give exactly what the rules give.

``rcall`` caches, per function and argument types, the callable it runs; for
float64 arrays and the ``rules`` package's own rules it may cache a leaner one
(``ad.runtime.lean_rules.lean_rule``): unary ufuncs, whole-array ``np.sum``/``np.mean`` and
2-d/1-d ``matmul``. The bias-add pullback of ``array_arithmetic`` has a lean path too, and
the generated primal drops dead temporaries. Each test compares, bit for bit,
the lean result with the rule's own (``rulescore.rrule``), for the cotangents
the lean path handles and for those it hands back to the rule.
"""

import operator

import numpy as np
import pytest
from ad_testing import general_gradient, in_place, rules_path, same_bits

import ad
from ad.runtime import array_arithmetic, lean_rules
from ad.runtime.reverse import _RULE_CACHE, rcall
from rules.extension import HOLOMORPHIC, OUTPUT_ONLY
from rulescore import NoTangent, Thunk, ZeroTangent, rrule, unthunk


def _both(pb, pb0, s):
    """The same result, or the same error, from the lean and the rule pullback."""
    try:
        want = pb0(s)
    except Exception as e:  # an invalid cotangent: the lean path must fail alike
        with pytest.raises(type(e)):
            pb(s)
        return
    same_bits(pb(s), want)


def _lean(f, *args):
    y, pb = rcall(f, *args)
    assert _RULE_CACHE[(f, *map(type, args))][0].__module__ == "ad.runtime.lean_rules"
    if np.ndim(args[0]) and args[0].size:  # served by it, float32 as float64, not its rule
        owner = pb if type(pb).__name__ == "function" else type(pb)
        assert owner.__module__ == "ad.runtime.lean_rules", (f, args[0].dtype)
    return y, pb


def _seeds(y, rng):
    seeds = [rng.normal(size=np.shape(y)), ZeroTangent()]
    seeds.append(Thunk(lambda: np.full(np.shape(y), 0.5)))
    seeds.append(rng.normal(size=np.shape(y)).astype(np.float32))
    if np.ndim(y):
        seeds.append(rng.normal(size=(1,) * np.ndim(y)))  # a broadcasting cotangent
    return seeds


def _domain(f, x):
    name = f.__name__
    if name in ("log", "log2", "log10", "log1p", "sqrt", "cbrt", "reciprocal", "arccosh"):
        return np.abs(x) + 1.5
    if name in ("arcsin", "arccos", "arctanh"):
        return np.tanh(x) * 0.9
    return x


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f", list(HOLOMORPHIC), ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(5,), (3, 4), ()])
def test_unary_ufuncs_match_the_rule(f, shape, dtype):
    rng = np.random.default_rng(1)
    x = _domain(f, np.asarray(rng.normal(size=shape)))
    x = np.asarray(x, dtype=dtype)
    y, pb = _lean(f, x)
    y0, pb0 = rrule(f, x)
    same_bits(y, y0)
    for s in _seeds(y, rng):
        _both(pb, pb0, s)
        _both(pb, pb0, s)  # a second call gives the same again


@pytest.mark.parametrize("dtype", [np.float32, np.complex128, np.int64])
def test_other_dtypes_go_through_the_rule(dtype):
    x = np.arange(1, 5).astype(dtype)
    for f in (np.tanh, np.sin, np.exp, np.sum, np.mean):
        y, pb = rcall(f, x)
        y0, pb0 = rrule(f, x)
        same_bits(y, y0)
        seed = np.ones_like(y0) if np.ndim(y0) else 1.0
        same_bits(pb(seed), pb0(seed))


def test_output_only_pullbacks_keep_no_input_alive():
    import sys

    x = np.ones(1000)
    before = sys.getrefcount(x)
    y, pb = rcall(np.tanh, x)
    assert sys.getrefcount(x) == before  # only x's shape and dtype are kept
    y, pb = rcall(np.sum, x)
    assert sys.getrefcount(x) == before
    del y, pb


@pytest.mark.parametrize(
    "f", [f for f in HOLOMORPHIC if f not in OUTPUT_ONLY], ids=lambda f: f.__name__
)
def test_input_only_pullbacks_keep_no_output_alive(f):
    import weakref

    x = _domain(f, np.linspace(0.1, 0.9, 300))
    y, pb = _lean(f, x)
    gone = weakref.ref(y)
    del y
    assert gone() is None  # the pullback keeps x, not the output
    y0, pb0 = rrule(f, x)
    same_bits(pb(np.ones(300)), pb0(np.ones(300)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f", [np.sum, np.mean])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (), (0,), (300,)])
def test_whole_array_reductions_match_the_rule(f, shape, dtype):
    rng = np.random.default_rng(2)
    x = np.asarray(rng.normal(size=shape) * 10.0 ** rng.uniform(-8, 8, size=shape), dtype=dtype)
    if f is np.mean and x.size == 0:
        with pytest.warns(RuntimeWarning):
            rrule(f, x)
        return
    y, pb = _lean(f, x)
    y0, pb0 = rrule(f, x)
    same_bits(y, y0)
    for s in (
        1.0,
        np.float64(-2.5),
        np.float32(0.3),
        3,
        1.5 + 2j,
        ZeroTangent(),
        Thunk(lambda: 0.25),
    ):
        same_bits(pb(s), pb0(s))


@pytest.mark.parametrize(
    "fn", [np.matmul, operator.matmul, np.dot], ids=["np.matmul", "@", "np.dot"]
)
@pytest.mark.parametrize("shapes", [((4, 3), (3, 2)), ((4, 3), (3,)), ((3,), (3, 2)), ((3,), (3,))])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_matmul_matches_the_rule(fn, shapes, dtype):
    rng = np.random.default_rng(3)
    a, b = (rng.normal(size=s).astype(dtype) for s in shapes)
    y, pb = _lean(fn, a, b)
    y0, pb0 = rrule(fn, a, b)
    same_bits(y, y0)
    seeds = (rng.normal(size=np.shape(y)), ZeroTangent(), Thunk(lambda: np.ones(np.shape(y))))
    for s in (*seeds, rng.normal(size=np.shape(y)).astype(dtype)):
        same_bits(pb(s), pb0(s))


def test_matmul_of_other_dtypes_and_ranks_goes_through_the_rule():
    a32 = np.ones((2, 3), np.float32)
    i64 = np.ones((3, 2), np.int64)
    for a, b in ((a32, np.ones((3, 2))), (np.ones((2, 2, 3)), np.ones((3, 2))), (i64.T, i64)):
        y, pb = rcall(operator.matmul, a, b)
        y0, pb0 = rrule(operator.matmul, a, b)
        same_bits(y, y0)
        same_bits(pb(np.ones_like(y0)), pb0(np.ones_like(y0)))


@pytest.mark.parametrize("op", [operator.add, operator.sub])
@pytest.mark.parametrize("bias_first", [False, True])
def test_bias_add_pullback_matches_the_rule(op, bias_first):
    rng = np.random.default_rng(4)
    m, v = rng.normal(size=(6, 5)), rng.normal(size=5)
    a, b = (v, m) if bias_first else (m, v)
    fasti = array_arithmetic.fasti_add if op is operator.add else array_arithmetic.fasti_sub
    y, pb = fasti(a, b)
    y0, pb0 = rrule(op, a, b)
    same_bits(y, y0)
    seeds = [rng.normal(size=(6, 5)), Thunk(lambda: np.ones((6, 5))), ZeroTangent()]
    seeds.append(np.array([[0.0, -0.0, 1e300, -1e300, 1e-300]] * 6))  # signed zeros
    for s in seeds:
        same_bits(pb(s), pb0(s))


def _mlp(W, b, X):
    h = np.tanh(X @ W + b)
    return np.mean(np.exp(h) * np.sin(h)) + np.sum(h @ W.T)


def test_gradients_match_the_rules_path_bit_for_bit():
    rng = np.random.default_rng(5)
    W, b, X = rng.normal(size=(4, 4)), rng.normal(size=4), rng.normal(size=(3, 4))
    lean = ad.gradient(lambda W, b: _mlp(W, b, X), W, b)
    with rules_path():
        general = ad.gradient(lambda W, b: _mlp(W, b, X), W, b)
    same_bits(tuple(lean), tuple(general))


def test_a_rule_registered_after_the_first_transform_is_honoured(tmp_path):
    """Checked in a fresh interpreter: rules cannot be unregistered."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "override_numpy.py"
    script.write_text(
        textwrap.dedent(
            """
            import numpy as np
            import ad
            from rulescore import NoTangent, rrule

            def f(x):
                return np.sum(np.tanh(x)) + np.mean(x @ x)

            x = np.array([[0.0, 1.0], [2.0, 3.0]])
            g0 = ad.gradient(f, x)[0]

            @rrule.register(np.tanh)
            def _(x: np.ndarray):
                return np.tanh(x), lambda ȳ: (NoTangent(), 10.0 * ȳ)

            g1 = ad.gradient(f, x)[0]
            assert np.allclose(g1 - g0, 10.0 - (1 - np.tanh(x) ** 2)), (g0, g1)

            @rrule.register(np.sum)
            def _(x: np.ndarray):
                return np.sum(x), lambda ȳ: (NoTangent(), np.full(x.shape, 100.0))

            g2 = ad.gradient(f, x)[0]
            assert np.allclose(g2 - g1, 100.0 * 10.0 - 10.0), (g1, g2)
            print("ok")
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# --- dead temporaries in the generated primal ---------------------------------------


def _chain(x):
    a = np.sin(x) * np.exp(-0.5 * x * x) + np.tanh(x) * x
    return np.sum(a + x * x)


def test_dead_temporaries_are_dropped_and_gradients_unchanged():
    src = ad.code_adjoint(_chain, np.ones(3))
    assert " = None  # line" in src
    x = np.linspace(-1.0, 1.0, 7)
    (g,) = ad.gradient(_chain, x)
    want = (
        (np.cos(x) - x * np.sin(x)) * np.exp(-0.5 * x * x)
        + (1 - np.tanh(x) ** 2) * x
        + np.tanh(x)
        + 2 * x
    )
    np.testing.assert_allclose(g, want, rtol=1e-13)


def _loops_and_branches(x, n):
    total = 0.0
    for i in range(n):
        y = np.tanh(x * (i + 1.0)) if i % 2 else np.sin(x) * 2.0
        total = total + np.sum(y * y)
    zs = [np.exp(x * k) for k in range(3)]
    for z in zs:
        total = total + np.mean(z * x)
    return total


def test_temporaries_in_loops_comprehensions_and_conditionals(check_grad):
    x = np.array([0.3, -0.2, 0.5])
    check_grad(lambda x: _loops_and_branches(x, 4), x)
    # the pullback can be called again: nothing it needs was dropped
    y, back = ad.pullback(lambda x: _loops_and_branches(x, 3), x)
    first = back(1.0)[0]
    np.testing.assert_array_equal(back(1.0)[0], first)


def test_tracebacks_still_point_at_user_lines():
    import traceback

    def f(x):
        a = np.sin(x) * 2.0
        b = a @ np.ones((2, 2))  # shape mismatch: raises here
        return np.sum(b)

    with pytest.raises(ValueError) as info:
        ad.gradient(f, np.ones(3))
    here = f.__code__.co_filename
    frames = [fr for fr in traceback.extract_tb(info.value.__traceback__) if fr.filename == here]
    assert frames[-1].lineno == f.__code__.co_firstlineno + 2


def test_square_of_an_array_accumulates_once_per_operand():
    x = np.array([1.0, -2.0, 3.0])
    (g,) = ad.gradient(lambda x: np.sum(x * x), x)
    np.testing.assert_array_equal(g, 2 * x)
    assert isinstance(rrule(np.tanh, x)[1](np.ones(3))[0], NoTangent)


# --- the adjoint's array branch for mul and ``a ** n`` ---------------------------------


def _aliasing(x, y):
    t = x * y
    u = t * t  # one cotangent feeds both operands
    v = t**2 + y**3 + x**1
    w = u + v  # the add hands the same cotangent to u and v
    return np.sum(w * t + w * w) + np.sum(np.exp(x) * x)


def _in_a_loop(x, y):
    total = 0.0
    for k in range(3):
        z = x * y + k
        total = total + np.sum(z * z * x)
    return total


@pytest.mark.parametrize("f", [_aliasing, _in_a_loop])
def test_array_mul_and_pow_match_the_rules_bit_for_bit(f):
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    x0, y0 = x.copy(), y.copy()
    fast = ad.gradient(f, x, y)
    same_bits(tuple(fast), tuple(general_gradient(f, x, y)))
    np.testing.assert_array_equal(x, x0)  # inputs untouched
    np.testing.assert_array_equal(y, y0)


def test_the_pullback_of_array_products_can_be_called_twice():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    _, back = ad.pullback(lambda x, y: np.sum((x * y) ** 2 * x), x, y)
    first = back(1.0)
    second = back(1.0)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def _rnn_loop(Wx, Wh, xs):
    h = np.zeros(Wh.shape[0])
    for x in xs:
        h = np.tanh(Wx @ x + Wh @ h)
    return np.sum(h)


def test_a_loop_tape_holds_small_pullbacks():
    """Per iteration of an RNN-style loop, the tape holds the new state, the row and
    three lean pullbacks (two products, one tanh): about 720 bytes in all. The
    pullbacks are tuples of their operands; as closures (a function object and a
    cell per captured variable) the same tape took about 1,950 bytes a step."""
    import tracemalloc

    rng = np.random.default_rng(7)
    Wx, Wh = rng.normal(size=(32, 8)), rng.normal(size=(32, 32)) / 6

    def held(steps):
        xs = rng.normal(size=(steps, 8))
        ad.pullback(_rnn_loop, Wx, Wh, xs)  # transform and dispatch caches first
        tracemalloc.start()
        try:
            kept = ad.pullback(_rnn_loop, Wx, Wh, xs)
            size = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        del kept
        return size

    per_step = (held(150) - held(50)) / 100
    assert per_step < 1000, per_step
    for s in (
        lean_rules._MatmulPullback,
        lean_rules._OutputOnlyPullback,
        lean_rules._UnaryPullback,
    ):
        assert s.__slots__ == ()  # no per-instance dict


def _dying_sum(x, y):
    # x*y dies at the first +, exp(x) at the second but the tape keeps it (exp's
    # pullback reads its output): only x*y's buffer may be reused
    return np.sum(x * y + np.exp(x) - y) + np.sum(np.exp(x) + x * y)


def _dying_names(x, y):
    a = x * y  # a user variable: never reused
    return np.sum(a + y) + np.sum(a)


def test_a_dying_temporary_receives_an_add_or_sub():
    """``t + u`` where the temporary ``t`` dies there is written into ``t``'s buffer
    when nothing else holds it (``_ad_fasti_add_into``); an output a pullback keeps
    (``exp(x)``), a user variable, or a shared array is never written."""
    src = ad.transform.adjoint_source(_dying_sum)
    assert "_ad_fasti_add_into(" in src and "_ad_fasti_sub_into(" in src
    assert "_into(a," not in ad.transform.adjoint_source(_dying_names)
    rng = np.random.default_rng(8)
    x, y = rng.normal(size=300), rng.normal(size=300)
    gx, gy = ad.gradient(_dying_sum, x, y)
    np.testing.assert_allclose(gx, 2 * (y + np.exp(x)), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gy, 2 * x - 1.0, rtol=1e-12, atol=1e-14)
    gx, gy = ad.gradient(_dying_names, x, y)
    np.testing.assert_allclose(gx, 2 * y, rtol=1e-14)


@in_place
def test_add_into_writes_into_an_operand_only_the_caller_holds():
    a, b = np.arange(4.0), np.ones(4)
    y, pb = array_arithmetic.fasti_add_into(a, b, 1)  # only this frame's `a` holds it
    assert y is a and pb is None
    np.testing.assert_array_equal(y, np.arange(4.0) + 1)
    c = np.arange(4.0)
    held = [c]
    y, pb = array_arithmetic.fasti_sub_into(b, c, 2)  # also held by a list: a new array
    assert y is not c and pb is None
    np.testing.assert_array_equal(held[0], np.arange(4.0))
    np.testing.assert_array_equal(y, 1 - np.arange(4.0))
    v = np.arange(6.0)[::2]  # a view: not its own memory
    assert array_arithmetic.fasti_add_into(v, np.ones(3), 1)[0] is not v


@in_place
@pytest.mark.parametrize("f", [np.exp, np.tanh])
def test_a_single_use_output_only_pullback_reuses_the_output(f):
    """Called once (``ONCE.expect`` is the pullback) while only its tuple holds the
    output, exp's and tanh's pullbacks write the cotangent into the output's buffer;
    the values are the rule's, bit for bit. Otherwise the output is left alone."""
    from ad.runtime.single_use import ONCE

    rng = np.random.default_rng(9)
    x, s = rng.normal(size=50), rng.normal(size=50)
    want = rrule(f, x)[1](s)

    y, pb = _lean(f, x)
    y_id = id(y)
    del y
    ONCE.expect = pb
    got = pb(s)
    assert ONCE.expect is None
    assert id(got[1]) == y_id  # the output's own buffer
    same_bits(got, want)

    y, pb = _lean(f, x)
    kept = y.copy()
    ONCE.expect = pb  # single use, but the caller still holds the output
    same_bits(pb(s), want)
    same_bits(y, kept)
    same_bits(pb(s), want)  # not single use: called again, same result
    same_bits(y, kept)


@pytest.mark.parametrize("op", [operator.add, operator.sub])
def test_a_dying_matrix_gets_a_new_array_for_its_bias_add(op):
    """Measured: writing ``x @ W + b`` into ``x @ W``'s buffer made the large MLP
    10% slower, so a bias add is not written into its dying operand."""
    into = (
        array_arithmetic.fasti_add_into if op is operator.add else array_arithmetic.fasti_sub_into
    )
    rng = np.random.default_rng(10)
    M, v, s = rng.normal(size=(6, 5)), rng.normal(size=5), rng.normal(size=(6, 5))
    want_y, want_pb = rrule(op, M.copy(), v)
    M_id = id(M)
    y, pb = into(M, v, 1)
    assert id(y) != M_id
    same_bits(y, want_y)
    same_bits(pb(s), want_pb(s))


@pytest.mark.parametrize("shapes", [((4, 3), (3, 2)), ((4, 3), (3,)), ((3,), (3, 2)), ((3,), (3,))])
def test_small_products_are_eager_and_large_ones_lazy(shapes):
    rng = np.random.default_rng(11)
    a, b = (rng.normal(size=s) for s in shapes)
    y, pb = _lean(operator.matmul, a, b)
    s = rng.normal(size=np.shape(y))
    got = pb(s)
    assert all(type(c) is np.ndarray for c in got[1:])  # small: computed at once
    same_bits(got, rrule(operator.matmul, a, b)[1](s))
    n = lean_rules.EAGER_MATMUL_ENTRIES
    big_a, big_b = np.ones((n, 2)), np.ones((2, 3))
    y, pb = _lean(operator.matmul, big_a, big_b)
    assert all(isinstance(c, Thunk) for c in pb(np.ones(y.shape))[1:])


def test_lean_matmul_values_have_the_bits_of_the_operator():
    # np.dot for C/F-contiguous float64 operands (rules' ``product``), @ otherwise
    rng = np.random.default_rng(11)
    a, b = rng.normal(size=(9, 7)), rng.normal(size=(7, 5))
    pairs = [
        (a, b),
        (np.asfortranarray(a), b),
        (a, a.T),
        (b.T, a.T),
        (a, rng.normal(size=7)),
        (rng.normal(size=9), a),
        (a[:, ::2], b[::2]),  # strided views
    ]
    for x, y in pairs:
        out, pb = rcall(operator.matmul, x, y)
        same_bits(out, x @ y)
        ȳ = rng.normal(size=out.shape)
        _, dx, dy = pb(ȳ)
        same_bits(unthunk(dx), rrule(operator.matmul, x, y)[1](ȳ)[1])
        same_bits(unthunk(dy), rrule(operator.matmul, x, y)[1](ȳ)[2])
