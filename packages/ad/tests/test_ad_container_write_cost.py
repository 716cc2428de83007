"""Item writes into lists and dicts cost O(1) each in the backward pass.

The pullbacks of ``xs[i] = v``, ``d[k] = v``, ``xs.append(v)`` and ``xs += ys``
take the entries written out of the container's cotangent; they used to copy
the rest, so ``n`` writes read back cost ``n**2`` (29 µs an item at 1,000, 87
at 4,000). They now write into the cotangent in place when the adjoint alone
holds it (``ad.runtime.cotangents.take_entry`` and friends), and reads add into
the same cotangent in place (``ad.runtime.accumulate.acc``).

Checked: gradients against central differences and hand-derived values, in
reverse and forward mode and at second order (``ad.hessian``,
``ad.hessian_reverse``, ``ad.hvp``), float and array entries, with aliasing
(a list read twice, a list stored in another container, a dict copied then
written); and the number of whole cotangents copied, which no longer grows
with the container.
"""

from __future__ import annotations

import timeit

import numpy as np
import pytest
from ad_testing import fd_gradient, fd_hessian, in_place

import ad
import ad.runtime.cotangents as cotangents
from rulescore import Tangent

# --- programs: x is a vector of 3; the containers hold floats or arrays -----------


def dict_int_keys(x, n=7):
    d = {}
    for i in range(n):
        d[i] = x[i % 3] * x[(i + 1) % 3] * (i + 1)
    return sum(d[i] for i in range(n))


def dict_str_keys(x, n=7):
    d = {}
    keys = ["k" + str(i) for i in range(n)]
    for i, k in enumerate(keys):
        d[k] = x[i % 3] ** 2 + i
    s = 0.0
    for k in keys:
        s = s + d[k] * x[0]
    return s


def dict_augmented(x, n=7):
    d = {}
    for i in range(n):
        d[i] = x[i % 3]
    for i in range(n):
        d[i] += x[(i + 1) % 3] * d[i]
    return sum(d[i] * d[i] for i in range(n))


def dict_get(x, n=7):
    d = {}
    for i in range(n):
        d[i] = x[i % 3] * (i + 0.5)
    return sum(d.get(i) * d.get(i, 0.0) for i in range(n)) + d.get(n, x[1])


def list_written(x, n=9):
    xs = [0.0] * n
    for i in range(n):
        xs[i] = x[i % 3] * x[(i + 2) % 3]
    return sum(xs)


def list_recurrence(x, n=9):
    xs = [0.0] * n
    xs[0] = x[0]
    for i in range(1, n):
        xs[i] = xs[i - 1] * x[1] + x[2]
    return sum(xs)


def list_appended(x, n=9):
    hs = [x[0]]
    for i in range(n):
        hs.append(hs[-1] * x[1] + x[2] * i)
    return sum(hs) + hs[-1] * hs[0]


def list_extended(x, n=6):
    xs = []
    for i in range(n):
        xs += [x[i % 3] * i, x[0] * x[1]]
    return sum(v * v for v in xs)


def dict_of_arrays_reversed(x, n=6):
    d = {}
    for i in range(n):
        d[i] = x * (i + 1.0) + x[0]
    s = 0.0
    for i in range(n - 1, -1, -1):
        s = s + (d[i] * d[i]).sum()
    return s


def list_of_arrays_recurrence(x, n=6):
    hs = [x] * n
    for i in range(1, n):
        hs[i] = np.tanh(hs[i - 1] * 0.5 + x)
    return sum(h.sum() for h in hs)


# --- aliasing ---------------------------------------------------------------------


def list_read_twice(x, n=8):
    xs = [0.0] * n
    for i in range(n):
        xs[i] = x[i % 3] * (i + 1)
    a = sum(xs)
    b = sum(v * v for v in xs)
    return a * x[0] + b + xs[0] * xs[-1]


def list_in_another_container(x, n=8):
    xs = [0.0] * n
    for i in range(n):
        xs[i] = x[i % 3] * x[(i + 1) % 3]
    box = {"xs": xs, "again": xs, "w": x[2]}
    pair = (xs, box)
    return sum(box["xs"]) * box["w"] + box["again"][1] * pair[0][2]


def dict_copied_then_written(x, n=6):
    d = {}
    for i in range(n):
        d[i] = x[i % 3] * (i + 1)
    e = dict(d)
    f = {**d}
    for i in range(n):
        e[i] = e[i] * x[1]
        f[i] = d[i] + x[2]
    return sum(d[i] * e[i] + f[i] for i in range(n))


def list_copied_then_written(x, n=6):
    xs = [0.0] * n
    for i in range(n):
        xs[i] = x[i % 3] * (i + 1)
    ys = list(xs)
    zs = xs[:]
    for i in range(n):
        ys[i] = ys[i] * x[1]
        zs[i] = xs[i] * zs[i]
    return sum(ys) + sum(zs) + sum(xs)


PROGRAMS = [
    dict_int_keys,
    dict_str_keys,
    dict_augmented,
    dict_get,
    list_written,
    list_recurrence,
    list_appended,
    list_extended,
    dict_of_arrays_reversed,
    list_of_arrays_recurrence,
    list_read_twice,
    list_in_another_container,
    dict_copied_then_written,
    list_copied_then_written,
]
X = np.array([0.7, -0.4, 1.3])
# Left out at second order, failing there before this change as after it (known gaps):
# ``d.get(k)`` at reverse over reverse (ProjectTo(dict) refuses the cotangent of a key
# the dict has not yet), and ``xs += [...]`` on a list (MutationError from the ``+=``
# rule's body)
SECOND_ORDER = [f for f in PROGRAMS if f not in (dict_get, list_extended)]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_gradient_and_jvp_match_central_differences(f):
    fd = fd_gradient(f, X.copy())[0]
    g = ad.gradient(f, X.copy())[0]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
    v = np.array([0.3, -1.1, 0.8])
    np.testing.assert_allclose(ad.jvp(f, (X.copy(),), (v,))[1], fd @ v, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f", SECOND_ORDER, ids=lambda f: f.__name__)
def test_second_order_matches_central_differences(f):
    fd = fd_hessian(f, X.copy())
    np.testing.assert_allclose(ad.hessian(f, X.copy()), fd, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ad.hessian_reverse(f, X.copy()), fd, rtol=1e-5, atol=1e-5)
    v = np.array([1.0, 0.5, -2.0])
    np.testing.assert_allclose(ad.hvp(f, (X.copy(),), (v,))[0], fd @ v, rtol=1e-5, atol=1e-5)


# --- float arguments, hand-derived --------------------------------------------------


def scalar_dict(x, n):
    d = {}
    for i in range(n):
        d[i] = x * i
    return sum(d[i] for i in range(n))


def scalar_list(x, n):
    xs = [0.0] * n
    for i in range(n):
        xs[i] = x * i
    return sum(xs)


def scalar_recurrence(x, n):
    xs = [0.0] * n
    xs[0] = x
    for i in range(1, n):
        xs[i] = xs[i - 1] * x
    return sum(xs)


@pytest.mark.parametrize("n", [1, 2, 9, 40])
def test_float_programs_match_hand_derived(n):
    # sum_i x*i -> n(n-1)/2; sum_k x^k for k = 1..n -> sum k x^(k-1)
    x = 1.01
    assert ad.gradient(scalar_dict, x, n)[0] == pytest.approx(n * (n - 1) / 2)
    assert ad.gradient(scalar_list, x, n)[0] == pytest.approx(n * (n - 1) / 2)
    want = sum(k * x ** (k - 1) for k in range(1, n + 1))
    assert ad.gradient(scalar_recurrence, x, n)[0] == pytest.approx(want)
    assert ad.jvp(scalar_recurrence, (x, n), (1.0, None))[1] == pytest.approx(want)
    want2 = sum(k * (k - 1) * x ** (k - 2) for k in range(2, n + 1))
    assert ad.hessian(lambda x: scalar_recurrence(x, n), x) == pytest.approx(want2)


def written_containers(xs, d):
    xs = list(xs)
    d = dict(d)
    for i in range(len(xs)):
        xs[i] = xs[i] * xs[i]
    for k in list(d):
        d[k] = d[k] * 3.0
    return sum(xs) + sum(d.values()) + xs[0] * d["a"]


def test_arguments_copied_then_written_get_their_cotangents_in_their_own_form():
    # the in-place path hands back the very cotangent the adjoint held: the caller
    # still gets a list for a list and a dict for a dict, with the right values
    xs, d = [1.0, 2.0, 3.0], {"a": 0.5, "b": -1.0}
    gx, gd = ad.gradient(written_containers, xs, d)
    # s = sum xs_i^2 + 3 sum d_k + 3 xs_0^2 d_a
    assert type(gx) is list and type(gd) is dict
    assert gx == pytest.approx([2.0 + 6.0 * 0.5, 4.0, 6.0])
    assert gd == pytest.approx({"a": 3.0 + 3.0, "b": 3.0})
    assert xs == [1.0, 2.0, 3.0] and d == {"a": 0.5, "b": -1.0}


def test_a_pullback_called_twice_gives_the_same_cotangents():
    # the pullback's own seed and its saved state are not written into
    seed = 1.0
    y, back = ad.pullback(dict_of_arrays_reversed, X.copy())
    first = back(seed)[0].copy()
    np.testing.assert_array_equal(back(seed)[0], first)
    y, back = ad.pullback(list_read_twice, X.copy())
    first = back(seed)[0].copy()
    np.testing.assert_array_equal(back(seed)[0], first)


def listed(x, n):
    xs = [0.0] * n
    for i in range(n):
        xs[i] = x * i
    return xs


def test_a_users_list_seed_is_left_as_it_was():
    seed = [1.0] * 5
    keep = list(seed)
    _, back = ad.pullback(listed, 2.0, 5)
    assert back(seed)[0] == pytest.approx(10.0)
    assert seed == keep
    seed_t = Tangent[list]._from_backing(list(keep))
    assert back(seed_t)[0] == pytest.approx(10.0)
    assert list(seed_t._backing) == keep


# --- cost: the whole cotangent is copied a bounded number of times -----------------


def _count_copies(monkeypatch):
    """The lengths of the list and dict cotangents copied whole by the dismantlers
    (``entries`` and ``unthunk`` are called by them only when they copy)."""
    copies: list[int] = []
    entries, unthunk = cotangents.entries, cotangents.unthunk

    def counting_entries(ȳ, n, what):
        copies.append(n)
        return entries(ȳ, n, what)

    def counting_unthunk(t):
        b = getattr(t, "_backing", t)
        if isinstance(b, dict):
            copies.append(len(b))
        return unthunk(t)

    monkeypatch.setattr(cotangents, "entries", counting_entries)
    monkeypatch.setattr(cotangents, "unthunk", counting_unthunk)
    return copies


@in_place
@pytest.mark.parametrize(
    "f",
    [scalar_dict, scalar_list, scalar_recurrence, dict_int_keys, dict_augmented, list_appended],
    ids=lambda f: f.__name__,
)
def test_writes_copy_no_whole_cotangent_per_item(monkeypatch, f):
    copies = _count_copies(monkeypatch)
    args = (1.01, 400) if f.__name__.startswith("scalar") else (X.copy(), 400)
    ad.gradient(f, *args)
    assert len(copies) <= 3, f"{len(copies)} whole cotangents copied for 400 writes"


@in_place
def test_dict_of_arrays_copies_no_whole_cotangent_per_item(monkeypatch):
    copies = _count_copies(monkeypatch)
    ad.gradient(dict_of_arrays_reversed, X.copy(), 300)
    assert len(copies) <= 3, f"{len(copies)} whole cotangents copied for 300 writes"


def _seconds(f, *args):
    ad.gradient(f, *args)
    return min(timeit.repeat(lambda: ad.gradient(f, *args), number=1, repeat=3))


@pytest.mark.parametrize(
    "f", [scalar_dict, scalar_list, scalar_recurrence], ids=lambda f: f.__name__
)
def test_eight_times_the_writes_cost_about_eight_times_the_time(f):
    # quadratic pullbacks made this ratio 40 and more (29 µs an item at 1,000, 87 at
    # 4,000); linear ones about 8. The bound leaves room for a noisy machine.
    ratio = _seconds(f, 1.0001, 4000) / _seconds(f, 1.0001, 500)
    assert ratio < 20, f"{ratio:.1f}x the time for 8x the writes"
