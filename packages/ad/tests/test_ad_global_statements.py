"""The ``global`` statement in differentiated code (``transform.global_names``), and
plain Python writing constants into a global holder that a differentiated
function reads (``runtime.constant_reads``): checked against central finite
differences and hand-derived values in reverse, forward and second order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ad_testing import fd_gradient, fd_hessian

import ad

SCALE = 1.0
W = np.array([0.5, -1.5, 2.0])
STATE = {"scale": 1.0}
ACC = 0.0


@pytest.fixture(autouse=True)
def _reset():
    global SCALE, W, ACC
    SCALE, W, ACC = 1.0, np.array([0.5, -1.5, 2.0]), 0.0
    STATE["scale"] = 1.0
    yield


def _jvp(f, x):
    return ad.jvp(f, (x,), (np.ones_like(x) if isinstance(x, np.ndarray) else 1.0,))


# --- a global declared and only read ------------------------------------------


def read_only(x):
    global W
    return np.sum(np.sin(W * x) * x)


def read_only_scalar(x):
    global SCALE
    return SCALE * x**3


@pytest.mark.parametrize(
    ("f", "x"),
    [(read_only, np.array([0.3, 0.7, -1.1])), (read_only_scalar, 1.3)],
)
def test_global_only_read_differentiates_in_every_mode(f, x):
    fd = fd_gradient(f, x)[0]
    np.testing.assert_allclose(ad.gradient(f, x)[0], fd, rtol=1e-6)
    y, ẏ = _jvp(f, x)
    assert y == pytest.approx(f(x))
    assert ẏ == pytest.approx(np.sum(fd), rel=1e-6)
    np.testing.assert_allclose(
        np.reshape(ad.hessian(f, x), (-1,)), fd_hessian(f, x).reshape(-1), rtol=1e-5, atol=1e-6
    )


# --- a global declared and written: plain Python for constants, refused for values
# that carry a derivative (DESIGN: the AD follows no module's names) ----------------


def written_then_read(x):
    global SCALE
    SCALE = 2.0 * x
    return SCALE * x


def written_in_loop(x):
    global ACC
    ACC = 0.0
    for i in range(3):
        ACC += x ** (i + 1)
    return ACC * x


def written_array(x):
    global W
    W = np.cos(x)
    return np.sum(W * W)


def _sets_scale(x):
    global SCALE
    SCALE = 2.0 * x


def sets_in_a_helper(x):
    _sets_scale(x)
    return SCALE + x


@pytest.mark.parametrize(
    ("f", "x", "line"),
    [
        (written_then_read, 1.3, "SCALE = 2.0 * x"),
        (written_in_loop, 0.8, "ACC += x"),
        (written_array, np.array([0.2, -0.9]), "W = np.cos(x)"),
        (sets_in_a_helper, 0.7, "SCALE = 2.0 * x"),
    ],
)
@pytest.mark.parametrize("mode", ["reverse", "forward", "hessian"])
def test_global_rebound_to_a_value_carrying_a_derivative_is_refused(f, x, line, mode):
    src = Path(__file__).read_text().splitlines()
    with pytest.raises(ad.UnsupportedSyntaxError) as info:
        if mode == "reverse":
            ad.gradient(f, x)
        elif mode == "forward":
            _jvp(f, x)
        else:
            ad.hessian(f, x)
    msg = str(info.value)
    where = int(msg.split("test_ad_global_statements.py:")[1].split(":")[0])
    assert line in src[where - 1]
    assert "carries a derivative" in msg and "To fix: keep it in a local variable" in msg


def counts_calls(x):
    global ACC
    ACC += 1.0  # a counter: no derivative
    return x**3


def test_global_rebound_to_a_constant_in_the_function_is_plain_python():
    assert ad.gradient(counts_calls, 2.0) == pytest.approx((12.0,))
    assert ad.jvp(counts_calls, (2.0,), (1.0,)) == (pytest.approx(8.0), pytest.approx(12.0))
    assert ACC == 2.0  # each call counted, as Python does


def _reads_scale(x):
    return SCALE * x


def _sets_constant(x):
    global SCALE
    SCALE = 3.0  # a constant: no derivative to lose


def sets_a_constant_then_reads(x):
    _sets_constant(x)
    return _reads_scale(x) * x  # 3x^2


def test_global_rebound_to_a_constant_is_plain_python():
    assert ad.gradient(sets_a_constant_then_reads, 0.5) == pytest.approx((3.0,))
    assert ad.jvp(sets_a_constant_then_reads, (0.5,), (1.0,))[1] == pytest.approx(3.0)


def walrus_binds_global(x):
    global SCALE
    return (SCALE := x) * x


def test_global_bound_by_a_walrus_is_refused_naming_the_line():
    with pytest.raises(
        ad.UnsupportedSyntaxError,
        match=r"test_ad_global_statements\.py:\d+: in walrus_binds_global: the global name "
        r"'SCALE' is bound here by a NamedExpr.*To fix: bind a local name",
    ):
        ad.gradient(walrus_binds_global, 0.5)


# --- plain Python writing a constant into a global holder ---------------------


def _set_state(s):
    STATE["scale"] = s


def state_set_to_a_constant(x):
    _set_state(2.0)
    return x * STATE["scale"] * x  # 2x^2


def state_set_to_x(x):
    _set_state(2.0)
    _set_state(x)
    return STATE["scale"] * x  # x^2


@pytest.mark.parametrize(
    ("f", "x", "hand"),
    [
        (state_set_to_a_constant, 0.7, lambda x: 4 * x),
        (state_set_to_a_constant, np.array([0.7, -0.2]), lambda x: 4 * x),
        (state_set_to_x, 1.1, lambda x: 2 * x),
    ],
)
def test_plain_call_writing_a_constant_into_a_global_dict(f, x, hand):
    # it was refused: "a value carrying a derivative was written into it" (none was)
    red = (lambda x: np.sum(f(x))) if np.ndim(x) else f
    g = ad.gradient(red, x)[0]
    np.testing.assert_allclose(g, hand(x), rtol=1e-9)
    np.testing.assert_allclose(g, fd_gradient(red, x)[0], rtol=1e-6)
    assert _jvp(red, x)[1] == pytest.approx(np.sum(hand(x)), rel=1e-9)
    if f is state_set_to_x:  # a write of a derivative into a global: first order only
        with pytest.raises(ad.MutationError, match="nested .*differentiation does not follow"):
            ad.hessian(red, x)
        return
    np.testing.assert_allclose(
        np.reshape(ad.hessian(red, x), (-1,)),
        fd_hessian(red, x).reshape(-1),
        rtol=1e-5,
        atol=1e-6,
    )
