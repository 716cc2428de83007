"""A tangent or a seed given as an instance of the user's own class.

``ad.jvp(f, (p,), (P(1.0),))`` and a pullback called with ``P(1.0)`` mean the
same as ``Tangent[P](w=1.0)``: the instance's own fields (its ``__dict__``, its
slots, a dataclass's fields) are the tangent's. What the *class* holds, a class
attribute ``scale = 3.0``, is not the instance's and has no tangent: reading
``p.scale`` used to take the tangent instance's class attribute as the tangent
of ``scale`` (a jvp of 9.0 where 3.0 is right), and a pullback seeded with an
instance returned no gradient at all.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ad
from rulescore import Tangent


class P:
    scale = 3.0  # the class's, shared by every instance

    def __init__(self, w):
        self.w = w


class Slotted:
    __slots__ = ("a", "b")
    offset = 10.0

    def __init__(self, a, b):
        self.a = a
        self.b = b


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float
    name: str = "layer"


@dataclasses.dataclass(frozen=True)
class Frozen:
    x: float


class Holder:
    gain = 2.0

    def __init__(self, inner, c):
        self.inner = inner
        self.c = c


def uses_a_class_attribute(p):
    return p.w * p.scale


def slotted(s):
    return s.a * s.b + s.offset * s.a


def nested(h):
    return h.inner.w * h.inner.scale * h.c * h.gain


def test_a_class_attribute_is_not_read_as_a_tangent():
    y, ẏ = ad.jvp(uses_a_class_attribute, (P(2.0),), (P(1.0),))
    assert (y, ẏ) == (6.0, 3.0)  # d(w * 3)/dw = 3; the tangent's own `scale` is the class's
    assert ẏ == ad.jvp(uses_a_class_attribute, (P(2.0),), (Tangent[P](w=1.0),))[1]


def test_slots_and_a_class_attribute():
    # f = a b + 10 a: along (ȧ, ḃ) = (1, 2) at (a, b) = (3, 4): (b + 10) + 2a = 20
    _, ẏ = ad.jvp(slotted, (Slotted(3.0, 4.0),), (Slotted(1.0, 2.0),))
    assert ẏ == pytest.approx(20.0)


def test_a_nested_object_tangent():
    h, t = Holder(P(2.0), 5.0), Holder(P(1.0), 0.5)
    # f = w * 3 * c * 2: ẏ = 6 (c ẇ + w ċ) = 6 (5 + 1)
    assert ad.jvp(nested, (h,), (t,))[1] == pytest.approx(36.0)
    # against central differences along the same direction
    eps = 1e-6
    up = nested(Holder(P(2.0 + eps), 5.0 + 0.5 * eps))
    down = nested(Holder(P(2.0 - eps), 5.0 - 0.5 * eps))
    assert ad.jvp(nested, (h,), (t,))[1] == pytest.approx((up - down) / (2 * eps), rel=1e-6)


def test_a_dataclass_tangent_and_its_hvp():
    def loss(layer):
        return np.sum(np.tanh(layer.w) * layer.b) ** 2

    layer = Layer(np.array([0.3, -0.4]), 1.5)
    t = Layer(np.array([1.0, 2.0]), 0.5)
    as_instance = ad.hvp(loss, (layer,), (t,))[0]
    as_tangent = ad.hvp(loss, (layer,), (Tangent[Layer](w=t.w, b=t.b),))[0]
    np.testing.assert_allclose(as_instance.w, as_tangent.w)
    assert as_instance.b == pytest.approx(as_tangent.b)


def test_a_tangent_with_a_field_the_argument_lacks_is_refused():
    t = P(1.0)
    t.extra = 2.0
    with pytest.raises(TypeError, match=r"(?s)argument 1.*P.*extra.*Tangent\[P\]"):
        ad.jvp(uses_a_class_attribute, (P(2.0),), (t,))


def test_a_pullback_seeded_with_an_instance():
    def make(x):
        return P(x * 2.0)

    _, back = ad.pullback(make, 1.5)
    assert back(P(1.0)) == (2.0,)
    assert back(P(1.0)) == back(Tangent[P](w=1.0))

    def make_layer(x):
        return Layer(x * np.ones(2), 3.0 * x[0])

    x = np.array([1.0, 2.0])
    _, back = ad.pullback(make_layer, x)
    np.testing.assert_allclose(back(Layer(np.array([1.0, 1.0]), 2.0))[0], [7.0, 1.0])

    _, back = ad.pullback(lambda x: Frozen(x * x), 3.0)
    assert back(Frozen(1.0)) == (6.0,)
