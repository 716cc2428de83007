"""In-place writes under second derivatives: forward over forward of numpy's
in-place functions, augmented assignment and item assignment on local arrays;
``hessian``, ``hessian_reverse``, ``hvp`` and ``diaghessian`` of a function that
updates its parameter in place (each evaluation gets a copy: the user's array is
unchanged). Aliases the user can observe are still refused at every order.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from ad_testing import in_place

import ad

X = np.array([1.0, 2.0, 3.0])
V = np.array([0.3, -0.5, 0.7])
W = np.array([1.0, 0.2, -0.4])


def add_at(x):
    acc = np.zeros(3)
    np.add.at(acc, [0, 0, 2], x)  # acc = [x0 + x1, 0, x2]
    return np.sum(acc**2)


def augmented(x):
    x = x * 1.0
    x *= 2.0
    return np.sum(x**3)


def item_writes(x):
    a = np.zeros(3)
    a[1] = x[0]
    a[2] = x[1] * x[2]
    return np.sum(a**2)


def hess_add_at(x):
    return np.array([[2.0, 2.0, 0.0], [2.0, 2.0, 0.0], [0.0, 0.0, 2.0]])


def hess_augmented(x):
    return np.diag(48.0 * x)


def hess_item_writes(x):
    return np.array(
        [
            [2.0, 0.0, 0.0],
            [0.0, 2 * x[2] ** 2, 4 * x[1] * x[2]],
            [0.0, 4 * x[1] * x[2], 2 * x[1] ** 2],
        ]
    )


CASES = [(add_at, hess_add_at), (augmented, hess_augmented), (item_writes, hess_item_writes)]
IDS = ["np.add.at", "x *= 2.0", "a[i] = v"]


def first_order(f, x):
    """⟨∇f(x), V⟩ by forward mode."""
    return ad.jvp(f, (x,), (V,))[1]


def pairs(f):
    """⟨H V, W⟩ by each pair of modes."""
    return {
        "forward over forward": ad.jvp(lambda x: ad.jvp(f, (x,), (V,))[1], (X,), (W,))[1],
        "forward over reverse": ad.jvp(lambda x: ad.gradient(f, x)[0] @ V, (X,), (W,))[1],
        "reverse over forward": ad.gradient(lambda x: ad.jvp(f, (x,), (V,))[1], X)[0] @ W,
        "reverse over reverse": ad.gradient(lambda x: ad.gradient(f, x)[0] @ V, X)[0] @ W,
    }


@in_place
@pytest.mark.parametrize("f, hess", CASES, ids=IDS)
def test_writes_on_local_arrays_every_mode_pair(f, hess):
    want = V @ hess(X) @ W
    h = 1e-6
    fd = (first_order(f, X + h * W) - first_order(f, X - h * W)) / (2 * h)
    assert fd == pytest.approx(want, rel=1e-6)
    for mode, got in pairs(f).items():
        assert float(got) == pytest.approx(want, rel=1e-12, abs=1e-12), mode


@in_place
def test_forward_over_forward_hand_values():
    ff = ad.jvp(lambda x: ad.jvp(add_at, (x,), (V,)), (X,), (W,))
    (y, ẏ), (ẏ_outer, ÿ) = ff
    assert float(y) == 18.0  # (1 + 2)**2 + 3**2
    assert float(ẏ) == pytest.approx(3.0)  # 2*3*(0.3 - 0.5) + 2*3*0.7
    assert float(ẏ_outer) == pytest.approx(2 * 3 * 1.2 + 2 * 3 * -0.4)
    assert float(ÿ) == pytest.approx(-1.04)


def alias(x):
    acc = np.zeros(3)
    b = acc
    np.add.at(acc, [0, 0, 2], x)
    return np.sum(b**2)


def in_a_list(x):
    acc = np.zeros(3)
    keep = [acc]
    acc[1] = x[0]
    return np.sum(keep[0] ** 2)


def view_write(x):
    acc = np.zeros(3)
    u = acc[:2]
    u *= x[0]
    return np.sum(acc)


@in_place
@pytest.mark.parametrize(
    "f, held",
    [(alias, "'b'"), (in_a_list, "'keep'"), (view_write, "'acc'")],
    ids=["alias", "list", "view"],
)
def test_an_observable_alias_is_still_refused_at_forward_over_forward(f, held):
    with pytest.raises(ad.MutationError) as e:
        ad.jvp(lambda x: ad.jvp(f, (x,), (V,))[1], (X,), (W,))
    assert held in str(e.value)
    assert f"{__file__}:" in str(e.value) and "To fix:" in str(e.value)


# --- the Hessians of a function that updates its parameter in place ---------------


def scales_parameter(x):
    x *= 2.0
    return np.sum(x**3)


def scales_parameter_alias(x):
    y = x
    x *= 2.0
    return np.sum(x * y)


SECOND = {
    "hessian": lambda f, x: ad.hessian(f, x),
    "hessian_reverse": lambda f, x: ad.hessian_reverse(f, x),
    "hvp": lambda f, x: np.stack([ad.hvp(f, (x,), (e,))[0] for e in np.eye(x.size)], axis=1),
    "diaghessian": lambda f, x: np.diag(ad.diaghessian(f, x)[0]),
}


@in_place
@pytest.mark.parametrize("how", list(SECOND))
def test_second_derivatives_of_a_parameter_updated_in_place(how):
    x = X.copy()
    got = SECOND[how](scales_parameter, x)
    np.testing.assert_allclose(got, np.diag([48.0, 96.0, 144.0]), rtol=1e-12)
    h = 1e-5
    cols = [
        (ad.gradient(scales_parameter, x + h * e)[0] - ad.gradient(scales_parameter, x - h * e)[0])
        / (2 * h)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(got, np.stack(cols, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(x, X)  # the user's array is unchanged


@in_place
def test_second_derivatives_of_a_number_parameter_updated_in_place():
    assert ad.hessian(scales_parameter, 2.0) == pytest.approx(96.0)
    assert ad.hessian_reverse(scales_parameter, 2.0) == pytest.approx(96.0)


@in_place
@pytest.mark.parametrize("how", ["hessian", "hessian_reverse", "hvp"])
def test_an_alias_of_the_parameter_is_still_refused_by_the_hessians(how):
    x = X.copy()
    with pytest.raises(ad.MutationError) as e:
        SECOND[how](scales_parameter_alias, x)
    assert "'y'" in str(e.value) and "To fix:" in str(e.value)
    np.testing.assert_array_equal(x, X)


def test_a_refused_write_leaves_a_scripts_globals_alone(tmp_path):
    """The search for who else holds an array reads the variables of the frames
    calling the AD; a script's module frame has its globals as its variables, which
    the search once emptied (every name of the script gone after the error)."""
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            """
            import numpy as np
            import ad

            def g(x):
                x *= 2.0
                return np.sum(x)

            y = np.ones(3)
            try:
                ad.gradient(g, y)
            except ad.MutationError as e:
                assert "'y (in the caller" in str(e), str(e)
            print(np.sum(y), sorted(k for k in dir() if not k.startswith("__")))
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3.0", "['ad',", "'g',", "'np',", "'y']"]


# --- objects at forward over forward: a clear refusal at the user's line ------------


class Counter:
    def __init__(self):
        self.total = 0.0

    def add(self, v):
        self.total = self.total + v  # the write refused at forward over forward


class Scale:
    def __init__(self, k):
        self.k = k

    def apply(self, t):
        return self.k * t


COUNTER = Counter()


def method_writes_a_global_object(x):  # x³: f'' = 6x
    COUNTER.total = 0.0
    COUNTER.add(x * x)
    return COUNTER.total * x


def built_inside(x):  # 2x²: f'' = 4
    s = Scale(x)
    return s.apply(2.0 * x)


def _line(fn, text):
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_a_field_written_at_forward_over_forward_is_refused_at_the_users_line():
    with pytest.raises(ad.MutationError) as e:
        ad.jvp(lambda y: ad.jvp(method_writes_a_global_object, (y,), (1.0,))[1], (1.3,), (1.0,))
    message = str(e.value)
    assert message.startswith(f"{__file__}:{_line(Counter.add, 'self.total + v')}: ")
    assert "'total' of a Counter" in message and "_forward_rules" not in message
    assert "To fix: take this derivative with reverse mode" in message
    # the fix applies: the other orders of modes give f'' = 6x
    for second in (
        ad.hessian(method_writes_a_global_object, 1.3),
        ad.jvp(lambda y: ad.gradient(method_writes_a_global_object, y)[0], (1.3,), (1.0,))[1],
        ad.gradient(lambda y: ad.jvp(method_writes_a_global_object, (y,), (1.0,))[1], 1.3)[0],
    ):
        assert second == pytest.approx(6 * 1.3, rel=1e-12)


def test_an_object_built_at_forward_over_forward_is_refused_at_the_users_line():
    with pytest.raises(ad.NoRuleError) as e:
        ad.jvp(lambda y: ad.jvp(built_inside, (y,), (1.0,))[1], (1.3,), (1.0,))
    message = str(e.value)
    assert f"(at {__file__}:{_line(built_inside, 'Scale(x)')})" in message
    assert "a Scale object is constructed" in message and "To fix:" in message
    assert ad.hessian(built_inside, 1.3) == pytest.approx(4.0, rel=1e-12)
