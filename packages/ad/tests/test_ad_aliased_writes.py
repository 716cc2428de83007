"""Objects and containers written in place through a name that shares them with
another (``for p in ps: p.v = ...``, ``row = grid[0]; row[1] = ...``): followed
by identity from the write, and the other names read as differentiated
(``ad.transform.aliases``). Checked against central differences in reverse and
forward mode, and at second order where the machinery follows them (user
objects' fields); containers' items at second order are refused, naming the line."""

import numpy as np
import pytest

import ad


class P:
    def __init__(self, v):
        self.v = v


class Body:
    def __init__(self, pos, vel):
        self.pos = pos
        self.vel = vel


class Sys:
    def __init__(self):
        self.ps = [P(1.0), P(2.0)]


def scale(p, x):
    p.v = p.v * x


def loop_variable(x):
    ps = [P(2.0)]
    for p in ps:
        p.v = p.v + x
    return ps[0].v


def loop_augmented(x):
    ps = [P(2.0), P(1.0)]
    for p in ps:
        p.v += x * p.v
    return ps[0].v * ps[1].v


def item_alias(x):
    ps = [P(2.0)]
    p = ps[0]
    p.v = p.v * x * x
    return ps[0].v


def built_then_stored(x):
    c = P(2.0)
    ps = [c]
    c.v = c.v * x
    return ps[0].v + c.v


def enumerate_loop(x):
    ps = [P(2.0), P(3.0)]
    for i, p in enumerate(ps):
        p.v = p.v * x + i
    return ps[0].v * ps[1].v


def helper_writes(x):
    ps = [P(2.0), P(3.0)]
    for p in ps:
        scale(p, x)
    return ps[0].v * ps[1].v


def dict_of_objects(x):
    d = {"a": P(1.0), "b": P(2.0)}
    for k in d:
        q = d[k]
        q.v = q.v * x
    return d["a"].v * d["b"].v


def object_attribute_list(x):
    s = Sys()
    for p in s.ps:
        p.v = p.v * x
    return s.ps[0].v * s.ps[1].v


def generator_read(x):
    c = P(2.0)
    ps = [c]
    c.v = c.v * x
    return sum(p.v for p in ps) + c.v


def nbody(x):
    bs = [Body(np.array([0.0, 1.0]), np.zeros(2)), Body(np.array([1.0, 0.0]), np.zeros(2))]
    for _ in range(3):
        for b in bs:
            f = -x * b.pos
            b.vel += f * 0.1
        for b in bs:
            b.pos = b.pos + b.vel * 0.1
    return sum(np.sum(b.pos**2) for b in bs)


def nbody_float32(x):
    bs = [Body(np.ones(3, np.float32), np.zeros(3, np.float32)) for _ in range(4)]
    for b in bs:
        b.vel = b.vel + x * b.pos
        b.pos = b.pos * x + b.vel
    return float(sum(np.sum(b.pos * b.vel) for b in bs))


def grid_row(x):
    grid = [[0.0, 1.0], [2.0, 3.0]]
    row = grid[0]
    row[1] = x * x
    return grid[0][1] * x + sum(grid[1])


def list_in_list(x):
    a = [1.0]
    L = [a]
    a.append(x * x)
    return sum(L[0]) * 2.0


def whole_list_read(x):
    a = [1.0]
    L = [a]
    a[0] = x * x
    return sum(sum(r) for r in L)


def rows_written_and_grown(x):
    rows = [[1.0, 2.0], [3.0, 4.0]]
    for r in rows:
        r[0] = r[0] * x
        r.append(r[1] * x)
    return sum(sum(r) for r in rows) + rows[1][2] * x


def name_alias(x):
    d = {"k": 0.0}
    e = d
    e["k"] = x * x
    return d["k"] * x


OBJECTS = [
    loop_variable,
    loop_augmented,
    item_alias,
    built_then_stored,
    enumerate_loop,
    helper_writes,
    dict_of_objects,
    object_attribute_list,
    generator_read,
    nbody,
]
CONTAINERS = [grid_row, list_in_list, whole_list_read, rows_written_and_grown, name_alias]


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def _fd2(f, x, h=1e-4):
    return (f(x + h) - 2 * f(x) + f(x - h)) / h**2


@pytest.mark.parametrize("f", OBJECTS + CONTAINERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [0.7, 1.3])
def test_first_order_both_modes(f, x):
    want = _fd(f, x)
    (g,) = ad.gradient(f, x)
    assert g == pytest.approx(want, rel=1e-6, abs=1e-7)
    y, ẏ = ad.jvp(f, (x,), (1.0,))
    assert y == pytest.approx(f(x))
    assert ẏ == pytest.approx(want, rel=1e-6, abs=1e-7)


def test_hand_derived_values():
    # ps[0].v = 2 + x; 2(1+x)^2; (2x)(3x) = 6x^2; (2x)(3x+1)
    assert ad.gradient(loop_variable, 1.3) == (pytest.approx(1.0),)
    assert ad.gradient(loop_augmented, 1.3)[0] == pytest.approx(4 * 2.3)
    assert ad.gradient(helper_writes, 1.3)[0] == pytest.approx(12 * 1.3)
    assert ad.gradient(enumerate_loop, 1.3)[0] == pytest.approx(12 * 1.3 + 2)


def test_float32_fields():
    # vel = x, pos = 2x per entry: 12 entries of 2x^2, d/dx = 48x
    x = 0.8
    assert ad.gradient(nbody_float32, x)[0] == pytest.approx(48 * x, rel=1e-6)
    assert ad.jvp(nbody_float32, (x,), (1.0,))[1] == pytest.approx(48 * x, rel=1e-6)


@pytest.mark.parametrize("f", OBJECTS, ids=lambda f: f.__name__)
def test_second_order_objects(f):
    assert ad.hessian(f, 1.3) == pytest.approx(_fd2(f, 1.3), rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("f", CONTAINERS, ids=lambda f: f.__name__)
def test_second_order_containers_are_refused_naming_the_line(f):
    with pytest.raises(ad.MutationError) as e:
        ad.hessian(f, 1.3)
    assert __file__ in str(e.value) and "To fix" in str(e.value)


def test_a_parameter_s_objects_are_left_to_the_argument_checks():
    # the caller holds ps: a write through p into its objects is not this
    # function's to follow (refused, as before, naming the line)
    def f(ps, x):
        for p in ps:
            p.v = p.v * x
        return ps[0].v

    with pytest.raises(ad.ADError):
        ad.gradient(lambda x: f([P(2.0)], x), 1.3)
