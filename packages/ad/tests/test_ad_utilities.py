"""Zygote-style utilities: hook, showgrad, dropgrad, ignore_derivatives, checkpoint,
Buffer, isderiving, nestlevel, Params/Grads."""

import functools
import math
from dataclasses import dataclass

import numpy as np
import pytest

import ad
import rulescore

# --- hook -----------------------------------------------------------------------


def _hooked(x):
    return ad.hook(lambda g: 2.0 * g, x * x) * x  # its gradient: 5x², not 3x²


@pytest.mark.parametrize(
    "second",
    [
        lambda x: ad.hessian(_hooked, x),
        lambda x: ad.gradient(lambda y: ad.gradient(_hooked, y)[0], x),
        lambda x: ad.jvp(lambda y: ad.gradient(_hooked, y)[0], (x,), (1.0,)),
    ],
    ids=["hessian", "gradient of gradient", "jvp of gradient"],
)
def test_hook_inside_a_differentiated_gradient_is_refused(second):
    # was 9.0 (the derivative of 3x², the hook ignored) where the derivative of the
    # hooked gradient 5x² is 15.0
    assert ad.gradient(_hooked, 1.5)[0] == pytest.approx(5 * 1.5**2)
    with pytest.raises(ad.NoRuleError, match=r"test_ad_utilities\.py:\d+: ad\.hook inside"):
        second(1.5)


def test_hook_seed_negates_gradient():
    assert ad.gradient(lambda a, b: ad.hook(lambda g: -g, a) * b, 2, 3) == (-3.0, 2.0)


def test_hook_sees_the_gradient(capsys):
    seen = []
    assert ad.gradient(lambda a, b: ad.hook(lambda g: seen.append(g) or g, a) * b, 2.0, 3.0) == (
        3.0,
        2.0,
    )
    assert seen == [3.0]


def test_hook_returning_none_drops_the_gradient():
    assert ad.gradient(lambda a, b: ad.hook(lambda g: None, a) * b, 2.0, 3.0) == (None, 2.0)


def test_hook_clips_an_array_gradient():
    x = np.array([1.0, -2.0, 3.0])
    (g,) = ad.gradient(lambda x: np.sum(ad.hook(lambda g: np.clip(g, -1, 1), x) ** 3), x)
    np.testing.assert_array_equal(g, [1.0, 1.0, 1.0])


def test_hook_only_changes_its_own_use():
    # d/da (hook(-, a) * a) = -a (through the hook) + a (direct) = 0
    assert ad.gradient(lambda a: ad.hook(lambda g: -g, a) * a, 2.0) == (0.0,)


def test_hook_is_identity_outside_the_ad():
    x = np.ones(2)
    assert ad.hook(lambda g: 1 / 0, x) is x


def test_hook_is_not_called_when_no_gradient_flows():
    def f(a, b):
        ad.hook(lambda g: 1 / 0, a)  # result unused
        return a * b

    assert ad.gradient(f, 2.0, 3.0) == (3.0, 2.0)


# --- showgrad -------------------------------------------------------------------


def test_showgrad_seed(capsys):
    assert ad.gradient(lambda a, b: ad.showgrad(a) * b, 2.0, 3.0) == (3.0, 2.0)
    assert capsys.readouterr().out == "∂(a) = 3.0\n"


def test_showgrad_shows_the_gradient_of_this_use_not_the_total(capsys):
    assert ad.gradient(lambda a: ad.showgrad(a) * a, 2.0) == (4.0,)
    assert capsys.readouterr().out == "∂(a) = 2.0\n"


def test_showgrad_of_unused_value_prints_nothing(capsys):
    def f(a, b):
        ad.showgrad(a)  # not used, so no gradient
        return a * b

    assert ad.gradient(f, 2.0, 3.0) == (3.0, 2.0)
    assert capsys.readouterr().out == ""


def test_showgrad_labels_an_expression_by_its_source(capsys):
    ad.gradient(lambda a, b: ad.showgrad(a * 2.0) * b, 2.0, 3.0)
    assert capsys.readouterr().out == "∂(a * 2.0) = 3.0\n"


def test_showgrad_array(capsys):
    def f(x):
        y = ad.showgrad(x)
        return np.sum(y * np.array([1.0, 2.0]))

    ad.gradient(f, np.ones(2))
    assert capsys.readouterr().out == "∂(x) = array([1., 2.])\n"


def test_showgrad_outside_the_ad_returns_its_argument_silently(capsys):
    assert ad.showgrad(5.0) == 5.0
    assert capsys.readouterr().out == ""


# --- dropgrad and ignore_derivatives ----------------------------------------------------


def test_dropgrad_seed():
    assert ad.gradient(lambda a, b: ad.dropgrad(a) * b, 2.0, 3.0) == (None, 2.0)


def test_dropgrad_drops_only_its_use():
    assert ad.gradient(lambda a: ad.dropgrad(a) * a, 3.0) == (3.0,)


def test_ignore_derivatives_is_rulescores():
    assert ad.ignore_derivatives is rulescore.ignore_derivatives
    assert ad.gradient(lambda x: x * ad.ignore_derivatives(x), 3.0) == (3.0,)
    assert ad.gradient(lambda x: x * ad.ignore_derivatives(lambda: x * x), 3.0) == (9.0,)


def record(log, item):
    # Called with inactive arguments, so differentiated code runs it as plain
    # Python. (``log.append(...)`` on a captured list inside a differentiated
    # function is rewritten to rebind ``log``, which fails for a free variable.)
    log.append(item)


# --- checkpoint ----------------------------------------------------------------------


def loud_sin(x):
    print(x)
    return math.sin(x)


def test_checkpoint_seed_runs_forward_twice(capsys):
    assert ad.gradient(lambda x: ad.checkpoint(loud_sin, x), 1) == (math.cos(1),)
    assert capsys.readouterr().out == "1\n1\n"


def test_checkpoint_plain_call_runs_once(capsys):
    assert ad.checkpoint(loud_sin, 0.5) == math.sin(0.5)
    assert capsys.readouterr().out == "0.5\n"


def block(W, x):
    return np.tanh(W @ x)


def test_checkpoint_matches_plain_gradient(check_grad):
    W = np.array([[0.3, -0.2], [0.1, 0.5]])
    x = np.array([1.0, -1.0])
    f = lambda W, x: np.sum(ad.checkpoint(block, W, ad.checkpoint(block, W, x)) ** 2)  # noqa: E731
    got = check_grad(f, W, x)
    want = ad.gradient(lambda W, x: np.sum(block(W, block(W, x)) ** 2), W, x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)


def test_checkpoint_of_a_closure_sends_gradients_to_captured_variables():
    def f(x, y):
        return ad.checkpoint(lambda z: z * y, x) * 2.0

    assert ad.gradient(f, 3.0, 5.0) == (10.0, 6.0)


def test_checkpoint_keyword_arguments_are_passed():
    def scaled(x, *, scale):
        return x * scale

    assert ad.gradient(lambda x: ad.checkpoint(scaled, x, scale=4.0), 1.0) == (4.0,)


def test_checkpoint_backward_rerun_is_being_differentiated():
    levels = []

    def g(x):
        record(levels, (ad.isderiving(), ad.nestlevel()))
        return x * x

    assert ad.gradient(lambda x: ad.checkpoint(g, x), 3.0) == (6.0,)
    assert levels == [(True, 1), (True, 1)]


# --- isderiving and nestlevel --------------------------------------------------------


def levels_of(f, log):
    def g(x):
        record(log, (ad.isderiving(), ad.nestlevel()))
        return f(x)

    return g


def test_isderiving_and_nestlevel_outside_and_inside():
    log = []
    g = levels_of(lambda x: x * 2.0, log)
    g(1.0)
    ad.gradient(g, 1.0)
    ad.withgradient(g, 1.0)
    ad.pullback(g, 1.0)
    ad.jacobian(g, np.ones(2))
    assert log == [(False, 0)] + [(True, 1)] * 4


def test_isderiving_changes_what_runs():
    def f(x):
        return x * 2.0 if ad.isderiving() else -1.0

    assert f(3.0) == -1.0
    assert ad.gradient(f, 3.0) == (2.0,)


def test_nestlevel_counts_a_differentiation_started_inside_one():
    log = []
    g = levels_of(lambda x: x, log)

    def outer(x):
        inner = ad.ignore_derivatives(lambda: ad.gradient(g, x)[0])
        return x * inner

    assert ad.gradient(outer, 1.0) == (1.0,)
    assert log == [(True, 2)]


def test_nestlevel_seed_demo_first_levels(capsys):
    def f(x):
        print(ad.nestlevel(), "levels of nesting")
        return x

    def grad(f, x):
        return ad.gradient(f, x)[0]

    f(1)
    grad(f, 1)
    assert capsys.readouterr().out == "0 levels of nesting\n1 levels of nesting\n"


def test_nestlevel_seed_demo_second_level(capsys):
    def f(x):
        print(ad.nestlevel(), "levels of nesting")
        return x

    def grad(f, x):
        return ad.gradient(f, x)[0]

    assert grad(lambda x: x * grad(f, x), 1) == 1.0
    # f runs in the inner gradient, and again when the outer pullback
    # differentiates that gradient (reverse over forward): both at level 2.
    assert capsys.readouterr().out == "2 levels of nesting\n" * 2


# --- Buffer ---------------------------------------------------------------------


def vstack(xs):
    buf = ad.Buffer(xs, len(xs), 5)
    for i in range(5):
        buf[:, i] = xs
    return buf.copy()


def test_buffer_seed_vstack():
    np.testing.assert_array_equal(vstack([1, 2, 3]), np.repeat([[1], [2], [3]], 5, axis=1))
    assert vstack([1, 2, 3]).dtype.kind == "i"
    (g,) = ad.gradient(lambda x: np.sum(vstack(x)), [1, 2, 3])
    np.testing.assert_array_equal(g, [5.0, 5.0, 5.0])


def test_buffer_vstack_jacobian_runs_many_backward_passes():
    (J,) = ad.jacobian(vstack, np.array([1.0, 2.0]))
    want = np.zeros((10, 2))
    want[:5, 0] = 1
    want[5:, 1] = 1
    np.testing.assert_array_equal(J, want)


@pytest.mark.parametrize(
    "x,shape,want_shape,want_dtype",
    [
        (np.ones(3), (), (3,), np.float64),
        (np.ones(3, dtype=np.float32), (2, 2), (2, 2), np.float32),
        ([1, 2], (4,), (4,), np.int64),
        (np.ones((2, 3)), ((3, 2),), (3, 2), np.float64),
        (1 + 2j, (2,), (2,), np.complex128),
    ],
)
def test_buffer_is_like_x(x, shape, want_shape, want_dtype):
    buf = ad.Buffer(x, *shape)
    assert buf.shape == want_shape and buf.dtype == want_dtype
    np.testing.assert_array_equal(buf.copy(), np.zeros(want_shape))


def write_read(x):
    buf = ad.Buffer(x)
    buf[0] = x[1] * 2.0
    buf[1] = buf[0] * x[0]
    buf[0] = 7.0  # overwrites: the first write gets no gradient through slot 0
    buf[2] = np.sin(x[2])
    return np.sum(buf.copy() * np.array([1.0, 10.0, 100.0]))


def running_products(x):
    buf = ad.Buffer(x)
    buf[0] = x[0]
    for i in range(1, len(x)):
        buf[i] = buf[i - 1] * x[i]
    return np.sum(buf.copy() ** 2)


@pytest.mark.parametrize("f", [write_read, running_products])
def test_buffer_gradients_match_finite_differences(f, check_grad):
    check_grad(f, np.array([0.7, -1.3, 0.4]))


def test_buffer_write_then_overwrite_hand_derived():
    # y = 10 * (2 x1) x0 + 100 sin(x2): ∂ = (20 x1, 20 x0, 100 cos x2)
    (g,) = ad.gradient(write_read, np.array([1.0, 2.0, 0.0]))
    np.testing.assert_allclose(g, [40.0, 20.0, 100.0])


def test_buffer_reads_return_copies():
    buf = ad.Buffer(np.zeros(2))
    buf[:] = 1.0
    row = buf[:]
    buf[0] = 5.0
    np.testing.assert_array_equal(row, [1.0, 1.0])


def test_buffer_copy_freezes():
    buf = ad.Buffer(np.zeros(2))
    buf[0] = 1.0
    out = buf.copy()
    assert buf.frozen
    with pytest.raises(ad.MutationError, match=r"(?s)after copy\(\).*new ad.Buffer"):
        buf[1] = 2.0
    np.testing.assert_array_equal(out, [1.0, 0.0])


def test_buffer_write_after_copy_raises_while_differentiating():
    def f(x):
        buf = ad.Buffer(x)
        buf[0] = x[0]
        y = buf.copy()
        buf[1] = x[1]
        return np.sum(y)

    with pytest.raises(ad.MutationError, match="after copy"):
        ad.gradient(f, np.ones(2))


def test_buffer_is_not_an_array():
    buf = ad.Buffer(np.zeros(2))
    with pytest.raises(TypeError):
        buf + 1.0
    with pytest.raises(TypeError):
        np.sum(buf)
    with pytest.raises(TypeError, match=r"buf\.copy\(\)"):
        np.asarray(buf)


def fill_in_place(buf, v):
    buf[0] = v


def fill_and_return(buf, v):
    buf[0] = v
    return buf


def test_buffer_written_through_an_alias_is_an_error_not_a_wrong_gradient():
    def f(x):
        buf = ad.Buffer(x, 2)
        fill_in_place(buf, x[0])
        return np.sum(buf.copy())

    # Caught when the function writes into an argument it does not return.
    with pytest.raises(ad.MutationError, match=r"argument 'buf' and does not return it"):
        ad.gradient(f, np.ones(2))


def test_buffer_written_in_a_function_that_returns_it():
    def f(x):
        buf = ad.Buffer(x, 2)
        buf = fill_and_return(buf, x[0] * 3.0)
        return np.sum(buf.copy())

    (g,) = ad.gradient(f, np.ones(2))
    np.testing.assert_array_equal(g, [3.0, 0.0])


def test_buffer_in_forward_mode_matches_reverse_mode():
    x, v = np.array([0.7, -1.3, 0.4]), np.array([0.3, 1.0, -2.0])
    y, ẏ = ad.jvp(running_products, (x,), (v,))
    assert y == pytest.approx(running_products(x))
    assert ẏ == pytest.approx(ad.gradient(running_products, x)[0] @ v)
    _, ẏ = ad.jvp(vstack, (np.array([1.0, 2.0]),), (np.array([1.0, 0.0]),))
    np.testing.assert_array_equal(ẏ, [[1.0] * 5, [0.0] * 5])


def test_buffer_written_through_an_alias_in_forward_mode_is_an_error():
    def f(x):
        buf = ad.Buffer(x, 2)
        buf[1] = x[1]
        fill_in_place(buf, x[0])
        return np.sum(buf.copy())

    with pytest.raises(ad.MutationError, match="lost"):
        ad.jvp(f, (np.ones(2),), (np.ones(2),))


# --- Params and Grads ----------------------------------------------------------------


def make_model():
    W = np.array([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]])
    b = np.array([0.1, 0.2, 0.3])

    def linear(x):
        return W @ x + b

    return W, b, linear


X = np.array([1.0, -2.0])


def test_params_closure_seed_style():
    W, b, linear = make_model()
    grads = ad.gradient(lambda: np.sum(linear(X)), ad.Params([W, b]))
    np.testing.assert_array_equal(grads[W], np.tile(X, (3, 1)))
    np.testing.assert_array_equal(grads[b], np.ones(3))


def test_params_hand_derived_squared_loss():
    W, b, linear = make_model()
    grads = ad.gradient(lambda: np.sum(linear(X) ** 2), ad.Params([W, b]))
    r = W @ X + b
    np.testing.assert_allclose(grads[W], 2 * np.outer(r, X))
    np.testing.assert_allclose(grads[b], 2 * r)


def test_params_withgradient_and_pullback():
    W, b, linear = make_model()
    ps = ad.Params([W, b])
    res = ad.withgradient(lambda: np.sum(linear(X)), ps)
    assert res.val == pytest.approx(np.sum(W @ X + b))
    assert isinstance(res.grad, ad.Grads)
    np.testing.assert_array_equal(res.grad[b], np.ones(3))
    y, back = ad.pullback(lambda: linear(X), ps)
    g = back(np.array([1.0, 0.0, 0.0]))
    np.testing.assert_array_equal(g[W], [[1.0, -2.0], [0.0, 0.0], [0.0, 0.0]])


def test_params_seed_withgradient_aux_output():
    w = np.array([3.0])
    res = ad.withgradient(lambda: (np.sum(w**2), "aux"), ad.Params([w]))
    assert res.val == (9.0, "aux")
    np.testing.assert_array_equal(res.grad[w], [6.0])


@dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray

    def __call__(self, x):
        return np.tanh(self.W @ x + self.b)


def test_params_through_objects_methods_and_partials():
    m = Dense(np.array([[0.5, -0.2]]), np.array([0.1]))
    ps = ad.Params([m.W, m.b])
    want = ad.gradient(lambda W, b: np.sum(np.tanh(W @ X + b)), m.W, m.b)
    for loss in [
        lambda: np.sum(m(X)),  # a callable object captured by the closure
        functools.partial(lambda mm, x: np.sum(mm(x)), m, X),  # a partial's bound argument
        lambda: np.sum(m.__call__(X)),  # a bound method
    ]:
        grads = ad.gradient(loss, ps)
        np.testing.assert_allclose(grads[m.W], want[0])
        np.testing.assert_allclose(grads[m.b], want[1])


def test_params_reached_twice_add_up():
    W = np.ones((2, 2))
    f1 = lambda: np.sum(W)  # noqa: E731
    f2 = lambda: np.sum(W * 2.0)  # noqa: E731
    grads = ad.gradient(lambda: f1() + f2(), ad.Params([W]))
    np.testing.assert_array_equal(grads[W], np.full((2, 2), 3.0))


def test_params_in_a_container():
    layers = [np.array([2.0]), np.array([3.0])]
    grads = ad.gradient(lambda: np.sum(layers[0] * layers[1]), ad.Params(layers))
    assert grads[layers[0]] == pytest.approx([3.0]) and grads[layers[1]] == pytest.approx([2.0])


def test_params_unused_parameter_is_none_and_identity_matters():
    W, b, linear = make_model()
    c = np.ones(2)
    grads = ad.gradient(lambda: np.sum(linear(X)), ad.Params([W, c]))
    assert grads[c] is None
    with pytest.raises(KeyError, match="identity"):
        grads[W.copy()]  # equal values, different array
    assert b not in grads and W in grads
    assert len(grads) == 2 and list(grads) == [W, c]
    assert [k is p for (k, _), p in zip(grads.items(), [W, c])] == [True, True]


def test_params_collection():
    W = np.ones(2)
    ps = ad.Params([W, W])
    assert len(ps) == 1 and W in ps and W.copy() not in ps
    ps.add(np.zeros(1))
    assert len(ps) == 2
    with pytest.raises(TypeError, match="numpy arrays"):
        ad.Params([1.0])


GLOBAL_W = np.array([1.0, 2.0])


def global_loss():
    return np.sum(GLOBAL_W**2)


def test_params_read_as_module_global_is_a_clear_error():
    with pytest.raises(ad.ParamsError, match=r"(?s)'GLOBAL_W'.*global_loss.*closure"):
        ad.gradient(global_loss, ad.Params([GLOBAL_W]))
    with pytest.raises(ad.ParamsError, match="GLOBAL_W"):
        ad.gradient(lambda: global_loss(), ad.Params([GLOBAL_W]))


def make_global_closure():
    W = np.array([1.0, 2.0])

    def loss():
        return np.sum(W**2)

    return W, loss


GLOBAL_W2, GLOBAL_LOSS = make_global_closure()


def test_params_reached_through_a_global_function_is_a_clear_error():
    # the lambda reads GLOBAL_LOSS as a global: its captured W is out of reach
    with pytest.raises(ad.ParamsError, match="'GLOBAL_LOSS'"):
        ad.gradient(lambda: GLOBAL_LOSS(), ad.Params([GLOBAL_W2]))
    # passed in, the same closure works
    grads = ad.gradient(GLOBAL_LOSS, ad.Params([GLOBAL_W2]))
    np.testing.assert_array_equal(grads[GLOBAL_W2], [2.0, 4.0])


# --- forwarddiff ------------------------------------------------------------------


def _pow(x, n):
    r = 1.0
    for _ in range(n):
        r = r * x
    return r


def test_forwarddiff_seed_examples():
    assert ad.gradient(lambda x: ad.forwarddiff(lambda v: _pow(v, 2), x), 5.0) == (10.0,)
    # captured values get no gradient through forwarddiff ...
    assert ad.gradient(lambda a, b: ad.forwarddiff(lambda a: a * b, a), 2.0, 3.0) == (3.0, None)
    # ... pass them in instead
    g = ad.gradient(lambda a, b: ad.forwarddiff(lambda ab: ab[0] * ab[1], [a, b]), 2.0, 3.0)
    assert g == (3.0, 2.0)


def test_forwarddiff_on_arrays_matches_reverse_mode():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 4))
    x = rng.normal(size=4)

    def inner(v):
        return np.tanh(A @ v) * 2.0

    def loss(v):
        return np.sum(ad.forwarddiff(inner, v) ** 2)

    (g,) = ad.gradient(loss, x)
    (want,) = ad.gradient(lambda v: np.sum(inner(v) ** 2), x)
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_forwarddiff_plain_call_and_bad_input():
    assert ad.forwarddiff(lambda v: v * 2, 3.0) == 6.0
    with pytest.raises(TypeError, match="real numbers or arrays"):
        ad.gradient(lambda z: ad.forwarddiff(lambda t: abs(t), z), 1 + 1j)
