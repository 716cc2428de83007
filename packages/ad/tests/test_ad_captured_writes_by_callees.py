"""A captured or global container written by *another* function (a closure, a
helper, a ``sorted`` key, a function ``map`` runs) and then read whole by the
function that called it (``sum(SEEN)``): the reads see the writes and their
derivative, or the read is refused (``MutationError`` at the user's line).

Which of the two depends on whether the writer was differentiated before the
reader was first transformed: then the reader reads the container through an
alias followed by identity (``transform.holders``), and that alias is followed
again around each call that may run the writer, so a whole-value read after
the call sees what the call wrote. It used to read the alias as it was at the
function's start, silently: ``9.0`` where ``18.0`` is right, in both modes.
Each program below runs reverse mode first and forward mode first (one copy
each, since the transform is cached per function), so both paths are checked.
"""

from __future__ import annotations

from typing import ClassVar

import pytest
from ad_testing import fd_gradient

import ad

SEEN: list = []
W = 1.5


def _push(v, w):
    SEEN.append(v * w)


def by_a_helper_rev(w):
    _push(3.0, w)
    _push(1.0, w)
    _push(2.0, w)
    return sum(SEEN) * w


def by_a_helper_fwd(w):
    _push(3.0, w)
    _push(1.0, w)
    _push(2.0, w)
    return sum(SEEN) * w


def by_a_closure_rev(w):
    def add(v):
        SEEN.append(v * w)

    add(3.0)
    add(1.0)
    add(2.0)
    return sum(SEEN) * w


def by_a_closure_fwd(w):
    def add(v):
        SEEN.append(v * w)

    add(3.0)
    add(1.0)
    add(2.0)
    return sum(SEEN) * w


def by_a_sort_key_rev(w):
    def key(v):
        SEEN.append(v * w)
        return v

    sorted([3.0, 1.0, 2.0], key=key)
    return sum(SEEN) * w


def by_a_sort_key_fwd(w):
    def key(v):
        SEEN.append(v * w)
        return v

    sorted([3.0, 1.0, 2.0], key=key)
    return sum(SEEN) * w


def by_a_mapped_function_rev(w):
    def scaled(v):
        SEEN.append(v * w)
        return v

    list(map(scaled, [3.0, 1.0, 2.0]))  # lazy: the writes happen in list(...)
    return sum(SEEN) * w


def by_a_mapped_function_fwd(w):
    def scaled(v):
        SEEN.append(v * w)
        return v

    list(map(scaled, [3.0, 1.0, 2.0]))
    return sum(SEEN) * w


# sum(SEEN) = 6w, f = 6w^2: f' = 12w
WANT = 12.0 * W
PAIRS = [
    (by_a_helper_rev, by_a_helper_fwd),
    (by_a_closure_rev, by_a_closure_fwd),
    (by_a_sort_key_rev, by_a_sort_key_fwd),
    (by_a_mapped_function_rev, by_a_mapped_function_fwd),
]


def _gradient(f):
    SEEN.clear()
    return ad.gradient(f, W)[0]


def _jvp(f):
    SEEN.clear()
    return ad.jvp(f, (W,), (1.0,))[1]


def _right_or_refused(run, f):
    try:
        return run(f)
    except ad.MutationError as e:
        assert "test_ad_captured_writes_by_callees.py:" in str(e) and "SEEN" in str(e)
        return None


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p[0].__name__.removesuffix("_rev"))
def test_the_reads_see_the_writes_or_are_refused_in_either_order(pair):
    rev_first, fwd_first = pair
    SEEN.clear()
    assert fd_gradient(lambda w: (SEEN.clear(), rev_first(w))[1], W)[0] == pytest.approx(
        WANT, rel=1e-6
    )
    got = {"rev": [], "fwd": []}
    for mode, run in (("rev", _gradient), ("fwd", _jvp), ("rev", _gradient), ("fwd", _jvp)):
        got[mode].append(_right_or_refused(run, rev_first))
    for mode, run in (("fwd", _jvp), ("rev", _gradient), ("fwd", _jvp), ("rev", _gradient)):
        got[mode].append(_right_or_refused(run, fwd_first))
    for mode, values in got.items():
        values = [v for v in values if v is not None]
        assert values, f"{mode}: refused every time"
        assert values == pytest.approx([WANT] * len(values), rel=1e-12), mode


def test_the_writes_happen_as_in_python():
    for run in (lambda f: ad.gradient(f, 2.0), lambda f: ad.jvp(f, (2.0,), (1.0,))):
        SEEN.clear()
        try:
            run(by_a_closure_fwd)
        except ad.MutationError:
            pass  # refused at the read: the writes before it happened
        assert SEEN == [6.0, 2.0, 4.0]


class Recorder:
    hist: ClassVar[list] = []  # a class attribute: one list every instance shares

    def __init__(self, v):
        self.v = v

    def record(self):
        self.hist.append(self.v * self.v)  # written through self


def read_through_the_class(a):
    Recorder.hist.clear()
    Recorder(a).record()
    return Recorder.hist[-1] * a  # the same list, read through the class: a³


def read_through_the_instance(a):
    Recorder.hist.clear()
    r = Recorder(a)
    r.record()
    return r.hist[-1] * a  # a³, read through the object that wrote it


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_class_attribute_written_through_self_and_read_through_the_class(mode):
    # was 1.69 where 5.07 is right (a²: the read through the class was a constant)
    a = 1.3
    with pytest.raises(
        ad.MutationError,
        match=r"(?s)read_through_the_class reads 'Recorder.hist'.*o\.hist rather than Recorder\.hist",
    ):
        if mode == "reverse":
            ad.gradient(read_through_the_class, a)
        else:
            ad.jvp(read_through_the_class, (a,), (1.0,))
    assert ad.gradient(read_through_the_instance, a)[0] == pytest.approx(3 * a * a)
    assert ad.jvp(read_through_the_instance, (a,), (1.0,))[1] == pytest.approx(3 * a * a)
    assert fd_gradient(read_through_the_instance, a)[0] == pytest.approx(3 * a * a, rel=1e-6)
