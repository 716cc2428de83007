"""Control flow in differentiated code: branches, loops, and the adjoint mirroring them."""

import math

import numpy as np
import pytest

import ad


def pow_loop(x, n):
    r = 1.0
    for _ in range(n):
        r = r * x
    return r


def pow_rec(x, n):
    if n == 0:
        return 1.0
    return x * pow_rec(x, n - 1)


def test_seed_pow_loop():
    assert ad.gradient(pow_loop, 5.0, 3) == (75.0, None)


def test_seed_pow_recursive():
    assert ad.gradient(pow_rec, 5.0, 3) == (75.0, None)


def relu_ish(x):
    if x > 0:
        y = x * x
    elif x > -1:
        y = 2.0 * x
    else:
        y = math.sin(x)
    return y


@pytest.mark.parametrize("x, expected", [(3.0, 6.0), (-0.5, 2.0), (-2.0, math.cos(-2.0))])
def test_if_elif_else(x, expected):
    assert ad.gradient(relu_ish, x) == (pytest.approx(expected),)


def test_branches_ending_in_returns():
    def f(x):
        if x > 1:
            return x**3
        else:
            return -x

    assert ad.gradient(f, 2.0) == (12.0,)
    assert ad.gradient(f, 0.5) == (-1.0,)


def test_conditional_expression_and_boolean_operators():
    def f(x, y):
        a = x if x > y else y
        b = (x > 0 and y) or x
        return a * b

    assert ad.gradient(f, 3.0, 2.0) == (2.0, 3.0)
    assert ad.gradient(f, -1.0, 2.0) == (2.0, -1.0)  # b = x, a = y


def test_while_loop_with_data_dependent_condition(check_grad):
    def f(x):
        s = x
        while s < 100.0:
            s = s * 1.5 + x
        return s

    check_grad(f, 2.0)


def test_for_over_list_tuple_array_rows(check_grad):
    def over_list(xs):
        total = 0.0
        for v in xs:
            total = total + v * v
        return total

    assert ad.gradient(over_list, [1.0, 2.0, 3.0]) == ([2.0, 4.0, 6.0],)
    assert ad.gradient(over_list, (1.0, 2.0)) == ((2.0, 4.0),)

    def over_rows(A):
        total = 0.0
        for row in A:
            total = total + np.sum(row) ** 2
        return total

    check_grad(over_rows, np.arange(6.0).reshape(3, 2))


def test_zip_enumerate_reversed_and_dict_items():
    def f(xs, ys, d):
        total = 0.0
        for i, (a, b) in enumerate(zip(xs, ys)):
            total = total + i * a * b
        for v in reversed(xs):
            total = total + v
        for _k, v in d.items():
            total = total + v * v
        return total

    gx, gy, gd = ad.gradient(f, [1.0, 2.0], [3.0, 4.0], {"a": 5.0})
    assert gx == [1.0, 1.0 + 4.0] and gy == [0.0, 2.0] and gd == {"a": 10.0}


def test_nested_loops(check_grad):
    def f(x, A):
        total = 0.0
        for i in range(2):
            for j in range(3):
                if (i + j) % 2 == 0:
                    total = total + A[i, j] * x
                else:
                    total = total - math.sin(x * A[i, j])
        return total

    check_grad(f, 0.7, np.arange(6.0).reshape(2, 3) / 6)


def test_augmented_assignment_on_scalars_and_arrays(check_grad):
    def f(x, v):
        r = 1.0
        for _ in range(3):
            r *= x
            r += 1.0
        w = v * 1.0
        w += v * v
        return r + np.sum(w)

    check_grad(f, 1.3, np.array([0.5, -1.0]))


def test_long_loop_has_no_recursion_limit():
    def f(x):
        s = 0.0
        for _ in range(100_000):
            s = s + x
        return s

    assert ad.gradient(f, 1.0) == (100_000.0,)


def test_list_comprehension_and_generator_sum():
    def f(x):
        sq = [x[i] ** 2 for i in range(len(x))]
        return sum(sq) + sum(v * 2.0 for v in x if v > 0)

    (g,) = ad.gradient(f, [1.0, -2.0, 3.0])
    assert g == [4.0, -4.0, 8.0]


def test_dict_comprehension():
    def f(x):
        d = {k: v * x for k, v in [("a", 1.0), ("b", 2.0)]}
        return d["a"] + d["b"]

    assert ad.gradient(f, 4.0) == (3.0,)


def test_lambda_capturing_argument_and_map_like_helper():
    def apply(g, v):
        return g(v)

    def f(x):
        h = lambda y: y * x  # noqa: E731
        return apply(h, 3.0) + h(x)

    assert ad.gradient(f, 2.0) == (3.0 + 4.0,)


def test_mutual_recursion():
    def even(x, n):
        return 1.0 if n == 0 else x * odd(x, n - 1)

    def odd(x, n):
        return 1.0 if n == 0 else x * even(x, n - 1)

    assert ad.gradient(even, 2.0, 4) == (32.0, None)


def test_code_adjoint_mirrors_the_loop():
    src = ad.code_adjoint(pow_loop, 5.0, 3)
    assert "for _ad_k in _ad_range(" in src  # the adjoint's reversed loop
    assert "# line" in src
    assert src.count("_ad_fasti_mul(") == 1  # one differentiated call per iteration


def test_map_sorted_reduce_filter():
    import functools

    def f(xs, a):
        ys = list(map(lambda v: v * a, xs))
        s = sorted(ys, reverse=True)
        prod = functools.reduce(lambda p, q: p * q, s[:2], 1.0)
        pos = list(filter(lambda v: v > 0, xs))
        return prod + sum(pos)

    gx, ga = ad.gradient(f, [1.0, 3.0, -2.0], 2.0)
    # ys = [2, 6, -4]; s[:2] = [6, 2]; prod = (3a)(1a) = 3a^2; the -2.0 gets no gradient
    assert gx == [pytest.approx(2 * 3 * 2 + 1), pytest.approx(2 * 1 * 2 + 1), None]
    assert ga == pytest.approx(6 * 2.0)


def test_map_over_two_sequences_with_a_user_function(check_grad):
    def weighted(v, w):
        return v * w + math.sin(v)

    def f(xs, ws):
        return sum(map(weighted, xs, ws))

    gx, gw = ad.gradient(f, [0.5, 1.5], (2.0, 3.0))
    assert gx == [pytest.approx(2.0 + math.cos(0.5)), pytest.approx(3.0 + math.cos(1.5))]
    assert gw == (0.5, 1.5)


def test_break_continue_and_loop_else():
    def f(x):
        total = 0.0
        for i in range(10):
            if i % 2 == 1:
                continue
            if i > 5:
                break
            total = total + x * i
        else:
            total = total * 100.0
        k = 0
        while True:
            k += 1
            total = total + x
            if k == 3:
                break
        else:
            total = 0.0
        return total

    # i = 0, 2, 4 contribute x*i (6x); broke at i = 6 so no else; then + 3x
    assert ad.gradient(f, 2.0) == (9.0,)


def test_early_return_inside_loop():
    def first_above(xs, t):
        for v in xs:
            if v > t:
                return v * v
        return 0.0

    assert ad.gradient(first_above, [1.0, 3.0, 5.0], 2.0) == ([None, 6.0, None], None)
    assert ad.gradient(first_above, [1.0], 2.0) == (None, None)


def test_assert_and_lambdas_capturing_loop_variables():
    def f(x):
        assert x > 0, "positive please"
        fs = [lambda y, k=k: y * k for k in range(1, 4)]
        total = 0.0
        for g in fs:
            total = total + g(x)
        return total

    assert ad.gradient(f, 2.0) == (6.0,)
    with pytest.raises(AssertionError, match="positive"):
        ad.gradient(f, -1.0)


def test_list_append_and_dict_mutation_in_loops(check_grad):
    def f(x):
        hist = []
        d = {"acc": 0.0}
        h = x
        for _ in range(4):
            h = math.tanh(h * 1.3)
            hist.append(h)
            d["acc"] = d["acc"] + h * h
        return sum(hist) + d["acc"]

    check_grad(f, 0.4)


def test_rnn_over_time_steps_matches_finite_differences(numgrad):
    rng = np.random.default_rng(1)
    Wx, Wh, Wy = rng.normal(size=(4, 2)), 0.3 * rng.normal(size=(4, 4)), rng.normal(size=4)
    xs = rng.normal(size=(5, 2))

    def rnn_loss(Wx, Wh, Wy):
        h = np.zeros(4)
        for x in xs:
            h = np.tanh(Wx @ x + Wh @ h)
        return float(Wy @ h) ** 2

    got = ad.gradient(rnn_loss, Wx, Wh, Wy)
    want = numgrad(rnn_loss, Wx, Wh, Wy)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)


def test_rnn_example_training_decreases_the_loss():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[3] / "examples" / "train_rnn.py"
    spec = importlib.util.spec_from_file_location("train_rnn", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    first, last = module.main(epochs=8)
    assert last < first


def test_tape_memory_grows_linearly_with_iterations():
    import tracemalloc

    def f(x, n):
        s = 0.0
        for _ in range(n):
            s = s + x * x
        return s

    def peak(n):
        ad.gradient(f, 1.0, 10)  # transform outside the measurement
        tracemalloc.start()
        ad.gradient(f, 1.0, n)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    small, large = peak(20_000), peak(40_000)
    assert 1.5 < large / small < 2.5
