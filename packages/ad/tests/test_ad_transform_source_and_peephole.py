"""The transform's cheaper forms: padded parsing, bounded lambda blocks, and the
adjoint peephole writing slots straight into adjoints known to be zero."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
from ad_testing import in_place, plain_targets

import ad
from ad.transform import adjoint_source
from ad.transform.source import get_source
from ad.transform.source_parse import _MAX_PAD


def _module_at(tmp_path, name: str, blank_lines: int):
    """A module whose ``f`` (and ``g``, a lambda) start after ``blank_lines`` lines."""
    path = tmp_path / f"{name}.py"
    path.write_text(
        "\n" * blank_lines
        + "def f(x, y):\n"
        + "    a = x * y\n"
        + "    return a + x\n"
        + "g = (lambda x:\n"
        + "     x * x)\n"
    )
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.parametrize("blank_lines", [0, 40, _MAX_PAD + 10])
def test_source_lines_are_the_files(tmp_path, blank_lines):
    module = _module_at(tmp_path, f"padded_{blank_lines}", blank_lines)
    tree = get_source(module.f).tree
    assert tree.lineno == blank_lines + 1
    assert [s.lineno for s in tree.body] == [blank_lines + 2, blank_lines + 3]
    assert tree.body[1].end_lineno == blank_lines + 3
    lam = get_source(module.g).tree
    assert lam.lineno == blank_lines + 4
    assert lam.body[0].value.lineno == blank_lines + 5
    assert ad.gradient(module.f, 2.0, 3.0) == (4.0, 2.0)
    assert ad.gradient(module.g, 3.0) == (6.0,)


def same_input_twice(x):
    return x * x


def target_is_an_input(x, y):
    x = x * y
    return x * y


def copies(x):
    y = x
    z = y
    return z * y


def in_a_loop(x, n):
    s = 0.0
    for _ in range(n):
        s = s + x * x
    return s


@pytest.mark.parametrize(
    "f, args, expected",
    [
        (same_input_twice, (3.0,), (6.0,)),
        (target_is_an_input, (2.0, 3.0), (9.0, 12.0)),
        (copies, (3.0,), (6.0,)),
        (in_a_loop, (1.5, 3), (9.0, None)),
    ],
)
def test_coalesced_adjoints_are_exact(f, args, expected):
    got = ad.gradient(f, *args)
    for g, e in zip(got, expected):
        if e is not None:
            assert math.isclose(g, e)


def test_a_first_accumulation_writes_the_adjoint_directly():
    src = plain_targets(adjoint_source(target_is_an_input))
    # The slots of the first accumulations into x's and y's adjoints are those adjoints...
    assert "_ad_u, _ad_d_x, _ad_d_y = _ad_mul_adjoint(_ad_p, _ad_d__ad_t1, 3)" in src
    assert "_ad_d_x = _ad_d__ad_t1 * _ad_p[0]" in src
    # ...the next one into y's adds.
    assert "_ad_d_y = _ad_acc(_ad_d_y, _ad_g2)" in src
    # x's adjoint is reset between the slot and the accumulation: no shortcut there.
    assert "_ad_d_x = _ad_g1" in src


def test_a_copy_hands_its_adjoint_over():
    src = adjoint_source(copies)
    assert "_ad_d_x = _ad_d_y" in src  # x's adjoint is zero there
    assert "_ad_d_y = _ad_acc(_ad_d_y, _ad_g)" in src


def _elementwise(x, y):
    return np.sum(np.sin(x) * np.exp(-0.5 * x * x) + np.tanh(y) * x + y * y)


def test_slots_are_released_after_their_accumulation():
    """A slot added into an adjoint (``X = _ad_acc(X, _ad_g1)``) is set to None
    right after: its array must not stay alive until a later block happens to
    reuse the name."""
    import re

    src = adjoint_source(_elementwise)
    lines = [ln.split("  #")[0].strip() for ln in src.splitlines()]
    added = [
        (i, m.group(2))
        for i, ln in enumerate(lines)
        if (m := re.match(r"(_ad_d_\w+) = _ad_acc\(\1, (_ad_g\d+)\)$", ln))
    ]
    assert added
    for i, slot in added:
        assert lines[i + 1] == f"{slot} = None"


@in_place
def test_an_elementwise_gradient_peaks_at_seven_arrays():
    """Peak memory of the gradient of a large elementwise expression: seven arrays
    of its size (nine with the slots kept, eight without the single-use exp and
    tanh pullbacks reusing their outputs)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=10**5), rng.normal(size=10**5)
    ad.gradient(_elementwise, x, y)
    tracemalloc.start()
    try:
        gx, gy = ad.gradient(_elementwise, x, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 7.5 * x.nbytes, peak / x.nbytes
    g = np.exp(-0.5 * x * x)
    np.testing.assert_allclose(
        gx, (np.cos(x) - x * np.sin(x)) * g + np.tanh(y), rtol=1e-10, atol=1e-12
    )
    np.testing.assert_allclose(gy, (1 - np.tanh(y) ** 2) * x + 2 * y, rtol=1e-10, atol=1e-12)


def _accumulations(tree):
    """Every ``_ad_d_* = v`` in ``tree`` listed as an accumulation (no slot places)."""
    import ast

    return {
        id(st): (st, None)
        for st in ast.walk(tree)
        if type(st) is ast.Assign
        and type(st.targets[0]) is ast.Name
        and st.targets[0].id.startswith("_ad_d_")
        and not (type(st.value) is ast.Name and st.value.id == "_ad_Z")
    }


@pytest.mark.parametrize(
    ("branches", "zero_after"),
    [
        # reset in both branches: zero after the join; in one only: not known
        ("if c:\n    _ad_d_a = _ad_Z\nelse:\n    _ad_d_a = _ad_Z\n", {"_ad_d_a", "_ad_d_b"}),
        ("if c:\n    _ad_d_a = _ad_Z\n", {"_ad_d_b"}),
        # written in one branch: not zero after, though zero on entry
        ("if c:\n    _ad_d_b = g\nelse:\n    pass\n", set()),
        ("if c:\n    pass\nelse:\n    _ad_d_b = g\n", set()),
        # written then reset within the branch, nested: still zero
        (
            "if c:\n    _ad_d_b = g\n    if d:\n        _ad_d_b = _ad_Z\n    else:\n"
            "        _ad_d_b = _ad_Z\n",
            {"_ad_d_b"},
        ),
        # a loop's writes leave it not known, whatever its body ends with
        ("for i in r:\n    _ad_d_b = g\n    _ad_d_b = _ad_Z\n", set()),
    ],
)
def test_the_zero_analysis_meets_branches(branches, zero_after):
    # simplify_adjoint walks each branch on one set and undoes it (a journal), not a
    # copy per ``if``: the set after a join is what is zero at the end of every path
    import ast

    from ad.transform.simplify import simplify_adjoint

    tree = ast.parse(branches + "_ad_d_a = h\n_ad_d_b = h\n")
    acc = _accumulations(tree)
    *body, read_a, read_b = tree.body
    zero = simplify_adjoint(tree.body, {"_ad_d_b"}, acc)
    assert zero == set()  # both written at the end
    # the two accumulations after the join: plain where zero, additions elsewhere
    for read, name in ((read_a, "_ad_d_a"), (read_b, "_ad_d_b")):
        plain = type(read.value) is ast.Name
        assert plain == (name in zero_after), ast.unparse(tree)
