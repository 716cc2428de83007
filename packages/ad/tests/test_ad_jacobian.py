"""ad.jacobian / ad.withjacobian: the seed's examples, shapes, finite differences, errors."""

import numpy as np
import pytest

import ad


def numjac(f, args, i, h=1e-6):
    """Central-difference Jacobian of f with respect to args[i], C-order flattened."""
    x = np.asarray(args[i], dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        a, b = list(args), list(args)
        a[i] = (x.ravel() + e).reshape(x.shape) if x.ndim else float(x) + h
        b[i] = (x.ravel() - e).reshape(x.shape) if x.ndim else float(x) - h
        cols.append((np.ravel(f(*a)) - np.ravel(f(*b))) / (2 * h))
    return np.stack(cols, axis=1)


# --- the seed's examples ------------------------------------------------------


def test_seed_slice_square():
    (J,) = ad.jacobian(lambda a: 100 * a[:3] ** 2, np.arange(1, 8))
    want = np.zeros((3, 7))
    want[0, 0], want[1, 1], want[2, 2] = 200, 400, 600
    np.testing.assert_array_equal(J, want)
    assert J.dtype == np.float64  # integer inputs are real numbers


def test_seed_scalar_argument_gives_vector():
    Ja, Jx = ad.jacobian(lambda a, x: a**2 * x, np.array([1, 2, 3]), 1)
    np.testing.assert_array_equal(Ja, np.diag([2.0, 4.0, 6.0]))
    np.testing.assert_array_equal(Jx, [1.0, 4.0, 9.0])
    assert Jx.shape == (3,)


def test_seed_cumsum():
    (J,) = ad.jacobian(np.cumsum, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(J, np.tril(np.ones((3, 3))))
    res = ad.withjacobian(np.cumsum, [1, 2, 3])
    np.testing.assert_array_equal(res.val, [1, 3, 6])
    np.testing.assert_array_equal(res.grad[0], np.tril(np.ones((3, 3))))
    assert isinstance(res, ad.WithJacobian) and res == (res.val, res.grad)


def test_seed_string_argument_gives_none():
    Ja, Js = ad.jacobian(lambda a, s: a ** len(s), np.array([1, 2, 3]), "str")
    np.testing.assert_array_equal(Ja, np.diag([3.0, 12.0, 27.0]))
    assert Js is None


def test_seed_tuple_argument_gives_none_though_gradient_understands_it():
    f = lambda a, t: np.sum(a * t[0]) + t[1]  # noqa: E731
    Ja, Jt = ad.jacobian(f, np.array([1, 2, 3]), (4, 5))
    np.testing.assert_array_equal(Ja, [[4.0, 4.0, 4.0]])
    assert Jt is None
    ga, gt = ad.gradient(f, np.array([1, 2, 3]), (4, 5))
    np.testing.assert_array_equal(ga, [4.0, 4.0, 4.0])
    assert gt == (6.0, 1.0)


# --- shapes ---------------------------------------------------------------------

SHAPE_CASES = [
    # (name, f, args, expected shapes)
    ("scalar out, vector arg", lambda x: np.sum(x**2), (np.ones(4),), [(1, 4)]),
    ("scalar out, scalar arg", lambda x: x**3, (2.0,), [(1,)]),
    ("vector out, scalar arg", lambda x: np.array([1.0, 2.0, 3.0]) * x, (2.0,), [(3,)]),
    ("matrix out, matrix arg", lambda X: X @ X, (np.ones((2, 2)),), [(4, 4)]),
    ("0-d array arg counts as array", lambda x: x * np.ones(3), (np.array(2.0),), [(3, 1)]),
    ("0-d array out", lambda x: np.sum(x) * np.ones(()), (np.ones(3),), [(1, 3)]),
    ("list arg is an array", lambda x: np.array(x) * 2.0, ([1.0, 2.0],), [(2, 2)]),
    ("nested list arg", lambda x: np.array(x).sum(axis=0), ([[1.0, 2.0], [3.0, 4.0]],), [(2, 4)]),
    ("tuple output", lambda x: (x * 2.0, x * x), (3.0,), [(2,)]),
    ("nested list output", lambda x: [[x[0], x[1]], [x[0] * x[1], 1.0]], ([2.0, 3.0],), [(4, 2)]),
    ("empty output", lambda x: x[:0], (np.ones(3),), [(0, 3)]),
]


@pytest.mark.parametrize("name,f,args,shapes", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_shapes(name, f, args, shapes):
    Js = ad.jacobian(f, *args)
    assert [J.shape for J in Js] == shapes


def test_nested_list_output_values():
    (J,) = ad.jacobian(lambda x: [[x[0], x[1]], [x[0] * x[1], 1.0]], [2.0, 3.0])
    np.testing.assert_array_equal(J, [[1, 0], [0, 1], [3, 2], [0, 0]])


@pytest.mark.parametrize(
    "arg",
    [(4, 5), "str", True, None, {"a": 1.0}, np.array(["a"]), [[1.0], [2.0, 3.0]]],
    ids=["tuple", "str", "bool", "None", "dict", "string array", "ragged list"],
)
def test_non_array_arguments_give_none(arg):
    J, Jo = ad.jacobian(lambda x, o: x * 2.0, np.ones(2), arg)
    assert Jo is None
    np.testing.assert_array_equal(J, 2 * np.eye(2))


# --- against finite differences ---------------------------------------------------

A = np.array([[1.0, -2.0, 0.5], [0.3, 0.7, -1.1]])
FD_CASES = [
    ("elementwise", lambda x: np.sin(x) * x[::-1], (np.array([0.3, -1.2, 2.0]),)),
    ("linear map", lambda x: A @ x, (np.array([0.1, 0.2, 0.3]),)),
    ("matrix in, matrix out", lambda X: X.T @ X, (A,)),
    ("two arguments", lambda x, y: np.outer(x, y), (np.array([1.0, 2.0]), np.array([0.5, -1.0]))),
    ("array and scalar", lambda x, s: np.exp(s * x), (np.array([0.1, -0.4]), 1.5)),
    ("reduction", lambda X: np.sum(X**2, axis=0), (A,)),
]


@pytest.mark.parametrize("name,f,args", FD_CASES, ids=[c[0] for c in FD_CASES])
def test_against_finite_differences(name, f, args):
    Js = ad.jacobian(f, *args)
    for i, J in enumerate(Js):
        want = numjac(f, args, i)
        if np.ndim(args[i]) == 0:
            want = want[:, 0]
        np.testing.assert_allclose(J, want, rtol=1e-6, atol=1e-8)


def test_float32_stays_float32():
    (J,) = ad.jacobian(lambda x: x * x, np.array([1.0, 2.0], dtype=np.float32))
    assert J.dtype == np.float32
    np.testing.assert_allclose(J, np.diag([2.0, 4.0]))


def test_complex_argument_follows_the_gradient_convention():
    # a real output of a complex input: each row is ∂y/∂re + i ∂y/∂im
    (J,) = ad.jacobian(lambda z: np.abs(z) ** 2, np.array([1 + 2j, 3 - 1j]))
    np.testing.assert_allclose(J, np.diag([2 + 4j, 6 - 2j]))


# --- reverse mode: one forward, one backward per output element -------------------


def test_forward_runs_once_backward_once_per_output():
    calls = {"forward": 0, "backward": 0}

    def bump(key):  # called with constants, so it runs as plain Python
        calls[key] += 1

    def count(g):
        bump("backward")
        return g

    def f(x):
        bump("forward")
        return ad.hook(count, x) * 3.0

    ad.jacobian(f, np.ones(5))
    assert calls == {"forward": 1, "backward": 5}


# --- errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "f,what",
    [
        (lambda x: {"y": x}, "dict"),
        (lambda x: "text", "str"),
        (lambda x: None, "NoneType"),
        (lambda x: x > 0, "bool"),
        (lambda x: [x, "a"], "list"),
    ],
    ids=["dict", "str", "None", "bool", "mixed list"],
)
def test_output_that_is_not_numbers_is_a_clear_error(f, what):
    with pytest.raises(ad.OutputTypeError, match=rf"(?s)got {what}.*ad\.pullback"):
        ad.jacobian(f, 1.0)


def test_complex_output_error_suggests_splitting():
    with pytest.raises(TypeError, match=r"(?s)complex.*np\.real"):
        ad.jacobian(lambda x: x * 1j, 1.0)
    with pytest.raises(ad.OutputTypeError, match=r"dtype complex128"):
        ad.jacobian(lambda x: x * 1j, np.ones(2))


@pytest.mark.parametrize(
    "f, args",
    [
        (lambda a: np.outer(a, a).ravel() * 2.0, (np.array([1.0, 2.0]),)),  # 4 outputs, 2 inputs
        (lambda x, a: np.sin(a * x), (0.5, np.array([1.0, 2.0, 3.0]))),
        (lambda a: 100 * a[:3] ** 2, (np.arange(1, 8),)),
    ],
)
def test_forward_and_reverse_modes_agree(f, args):
    fwd = ad.jacobian(f, *args, mode="forward")
    rev = ad.jacobian(f, *args, mode="reverse")
    auto = ad.jacobian(f, *args)
    for a, b, c in zip(fwd, rev, auto):
        np.testing.assert_allclose(a, b)
        np.testing.assert_allclose(a, c)
        assert a.shape == b.shape


def test_bad_mode_is_an_error():
    with pytest.raises(ValueError, match="mode must be"):
        ad.jacobian(np.sin, np.ones(2), mode="sideways")
