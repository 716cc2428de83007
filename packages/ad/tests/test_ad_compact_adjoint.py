"""The compact generated code for inlined arithmetic gives what the long form gave.

The primal tests its operands with one comparison (``type(a) is _ad_FP.mul is
type(b)``, see ``ad.runtime.scalar_paths.FLOAT_PATHS``); the adjoint reads float partials
inline and hands any other tape entry of ``*`` or ``** n`` to ``mul_adjoint`` /
``pow_adjoint``: a list of float arrays (the same partials, elementwise, the last
product written into a dead buffer) or a pullback. Values
are compared bit for bit with the plain products and with the rules' path.
"""

import math
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from ad_testing import general_gradient, in_place, plain_targets, same_bits

import ad
from ad.runtime import scalar_paths
from ad.runtime.inline_arithmetic import mul_adjoint, pow_adjoint
from ad.runtime.scalar_paths import FLOAT_PATHS, _refresh

# --- the helpers on list entries and pullbacks --------------------------------------


def _arrays(n=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)


@pytest.mark.parametrize("used", [1, 2, 3])
def test_mul_adjoint_of_a_list_entry_is_the_elementwise_partials(used):
    a, b, s = _arrays()
    keep = a.copy(), b.copy(), s.copy()
    _, da, db = mul_adjoint([b, a], s, used)
    want_a, want_b = keep[2] * keep[1], keep[2] * keep[0]
    same_bits(da, want_a) if used & 1 else None
    same_bits(db, want_b) if used & 2 else None
    assert (da is None) == (not used & 1) and (db is None) == (not used & 2)
    same_bits((a, b), keep[:2])  # the tape's values are never written


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_pow_adjoint_of_a_list_entry_is_the_elementwise_partial(n):
    a, _, s = _arrays(seed=1)
    keep = a.copy(), s.copy()
    _, da, dn = pow_adjoint([a], s, n)
    want = keep[1] * 1 if n == 1 else keep[1] * (n * keep[0] ** (n - 1))
    same_bits(da, want)
    assert dn is None
    same_bits(a, keep[0])


def test_floats_in_a_list_entry_multiply_as_floats():
    assert mul_adjoint([3.0, 2.0], 10.0, 3) == (None, 30.0, 20.0)
    assert pow_adjoint([3.0], 2.0, 3) == (None, 2.0 * (3 * 3.0**2), None)


def test_any_other_entry_is_a_pullback_called_as_is():
    got = (object(), 1.0, 2.0)

    def a_pullback(ȳ):
        assert ȳ == 4.0
        return got

    assert mul_adjoint(a_pullback, 4.0, 2) is got
    assert pow_adjoint(a_pullback, 4.0, 2) is got


# --- in-place products: only into buffers nobody else holds -------------------------


def _as_the_adjoint_calls(helper, entry, arg):
    """Call ``helper`` as the generated adjoint does: the cotangent is held by one
    variable of the caller only (reset right after); return (result, cotangent)."""
    s = np.full(4, 2.0)
    out = helper(entry, s, arg)
    return out, s


@in_place
def test_the_last_product_goes_into_a_cotangent_only_the_caller_holds():
    a, b = np.full(4, 3.0), np.full(4, 5.0)
    (_, da, db), s = _as_the_adjoint_calls(mul_adjoint, [b, a], 3)
    assert db is s and da is not s  # ∂a first, a new array; ∂b then reuses s
    same_bits(da, np.full(4, 10.0))
    same_bits(db, np.full(4, 6.0))
    (_, da, _), s = _as_the_adjoint_calls(mul_adjoint, [b, a], 1)
    assert da is s
    same_bits((a, b), (np.full(4, 3.0), np.full(4, 5.0)))


def test_tape_values_held_by_the_tape_alone_are_never_written():
    entry = [np.full(4, 5.0), np.full(4, 3.0)]  # temporaries the primal dropped
    for used in (1, 2, 3):
        mul_adjoint(entry, np.full(4, 2.0), used)
        same_bits(tuple(entry), (np.full(4, 5.0), np.full(4, 3.0)))
    entry = [np.full(4, 3.0)]
    for n in (1, 2, 3):
        pow_adjoint(entry, np.full(4, 2.0), n)
        same_bits(entry[0], np.full(4, 3.0))


def test_a_view_or_another_dtype_only_the_caller_holds_is_not_reused():
    base = np.full(8, 2.0)
    s = base[::2]  # held by this variable alone, but not its own memory
    _, da, _ = mul_adjoint([np.full(4, 3.0), None], s, 1)
    assert da is not s
    same_bits(base, np.full(8, 2.0))
    s = np.full(4, 2.0, np.float32)  # the product is float64: s cannot hold it
    _, da, _ = mul_adjoint([np.full(4, 3.0), None], s, 1)
    same_bits(da, np.full(4, 6.0))


def test_the_first_power_is_a_new_array():
    (_, da, _), s = _as_the_adjoint_calls(pow_adjoint, [np.full(4, 3.0)], 1)
    assert da is not s
    same_bits(da, np.full(4, 2.0))


def test_a_fresh_factor_receives_the_product_before_the_cotangent():
    a = np.full(4, 3.0)
    (_, da, _), s = _as_the_adjoint_calls(pow_adjoint, [a], 2)
    assert da is not s and da is not a
    same_bits(s, np.full(4, 2.0))  # the cotangent is left alone
    same_bits(da, np.full(4, 12.0))
    same_bits(a, np.full(4, 3.0))


def test_a_cotangent_someone_else_holds_is_never_written():
    a, b, s = np.full(4, 3.0), np.full(4, 5.0), np.full(4, 2.0)
    also = s
    _, da, db = mul_adjoint([b, a], s, 3)
    assert db is not s and da is not s
    same_bits(also, np.full(4, 2.0))
    same_bits(db, np.full(4, 6.0))


@pytest.mark.parametrize(
    "s, factor",
    [
        (np.full(8, 2.0)[::2], np.full(4, 3.0)),  # a view: not its own memory
        (np.full(4, 2.0), np.full(4, 3.0, np.float32)),  # another dtype
        (np.full((4, 1), 2.0), np.full(4, 3.0)),  # another shape (broadcasts)
    ],
)
def test_views_dtypes_and_shapes_that_differ_get_a_new_array(s, factor):
    keep = s.copy()
    _, da, _ = mul_adjoint([factor, factor], s, 1)
    same_bits(da, keep * factor)
    assert da is not s
    same_bits(s, keep)


def test_a_read_only_cotangent_is_never_written():
    s = np.full(4, 2.0)
    s.flags.writeable = False
    _, _, db = mul_adjoint([np.ones(4), np.full(4, 3.0)], s, 2)
    assert db is not s
    same_bits(db, np.full(4, 6.0))


# --- the generated code ---------------------------------------------------------------


_DATA = np.linspace(-1.0, 1.0, 12).reshape(3, 4)  # a global: carries no derivative


def _one_side(x, y):
    return np.sum(x * _DATA) + np.sum(_DATA * np.exp(y)) + np.sum(x**3 * x**2)


def _products(x, y):
    z = x * y
    w = z * z + x**1 + y**4
    return np.sum(w * x) + np.sum(z**2)


@pytest.mark.parametrize("f", [_one_side, _products])
def test_array_products_match_the_rules_bit_for_bit(f):
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    x0, y0 = x.copy(), y.copy()
    same_bits(tuple(ad.gradient(f, x, y)), tuple(general_gradient(f, x, y)))
    same_bits((x, y), (x0, y0))


def test_an_adjoint_called_twice_gives_the_same_cotangents():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    _, back = ad.pullback(_products, x, y)
    first, second = back(1.0), back(1.0)
    same_bits(tuple(first), tuple(second))


def _scalar(x, y):
    return x * y + x**3 - y / x


@pytest.mark.usefixtures("no_inlining")  # the calls' adjoints are what is checked
def test_the_generated_code_is_compact():
    src = ad.code_adjoint(_scalar, 1.5, 2.5)
    assert "_ad_type(x) is _ad_FP.mul is _ad_type(y)" in src
    assert "_ad_type(x) is _ad_FP.pow" in src
    assert "_ad_mul_adjoint(_ad_p, " in src and "_ad_pow_adjoint(_ad_p, " in src
    assert "_ad_list" not in src and "_ad_imul" not in src
    # the operators' tape entries are never generated adjoints: no once signal for them
    assert "_ad_O.expect = _ad_p" not in src
    assert "_ad_O.expect = _ad_p" in ad.code_adjoint(lambda x: _scalar(x, x), 1.5)


def test_only_the_cotangents_read_are_computed():
    x = np.ones((3, 4))
    src = plain_targets(ad.code_adjoint(_one_side, x, x))
    assert re.search(r"_ad_u, _ad_\w+, _ad_u = _ad_mul_adjoint\(_ad_p, _ad_\w+, 1\)", src)
    assert re.search(r"_ad_u, _ad_u, _ad_\w+ = _ad_mul_adjoint\(_ad_p, _ad_\w+, 2\)", src)


def test_floats_give_the_float_partials():
    x, y = 1.5, 2.5
    gx, gy = ad.gradient(_scalar, x, y)
    assert math.isclose(gx, y + 3 * x**2 + y / x**2) and type(gx) is float
    assert math.isclose(gy, x - 1 / x) and type(gy) is float


def test_float_paths_follow_the_flags():
    """With the built-in rules every inline float path is on; off (as ``_refresh``
    sets it when a rule for float products is registered, see the next test), the
    general path gives the same values."""
    assert all(getattr(FLOAT_PATHS, op) is float for op in scalar_paths._OPERATORS)
    expected = ad.gradient(_scalar, 1.5, 2.5)
    FLOAT_PATHS.mul = scalar_paths._NoFastPath
    try:
        assert ad.gradient(_scalar, 1.5, 2.5) == expected
    finally:
        _refresh()
    assert FLOAT_PATHS.mul is float


def test_a_rule_for_float_products_registered_later_is_honoured(tmp_path):
    """Checked in a fresh interpreter: rules cannot be unregistered."""
    script = tmp_path / "override_mul.py"
    script.write_text(
        textwrap.dedent(
            """
            import operator
            import ad
            from rulescore import NoTangent, rrule

            def f(x, y):
                return x * y + x

            assert ad.gradient(f, 2.0, 3.0) == (4.0, 2.0)

            @rrule.register(operator.mul)
            def _(a: float, b: float):
                return a * b, lambda ȳ: (NoTangent(), 10.0 * ȳ, 100.0 * ȳ)

            assert ad.gradient(f, 2.0, 3.0) == (11.0, 100.0), ad.gradient(f, 2.0, 3.0)
            print("ok")
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
