"""The two zero tangents: ``ZeroTangent()`` and ``NoTangent()``.

Both are singletons and subclasses of :class:`AbstractZero`, which implements
the algebra of an additive identity on both sides of Python numbers, numpy
arrays and other tangents. ``__array_ufunc__ = None`` makes numpy defer to our
reflected operators, so ``np.ones(3) + ZeroTangent()`` is the array (numpy would
otherwise broadcast over the zero as an object) without importing numpy here.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AbstractZero", "NoTangent", "ZeroTangent", "iszero"]


class AbstractZero:
    """Base of the zero tangents: ``x + zero == x`` and ``zero * x == zero``.

    >>> ZeroTangent() + 3.0
    3.0
    >>> 2.0 * ZeroTangent()
    ZeroTangent()
    >>> -NoTangent()
    NoTangent()
    """

    __slots__ = ()
    __array_ufunc__ = None
    _instance: AbstractZero | None = None

    def __new__(cls) -> AbstractZero:
        # Singletons: test zeros with ``is`` on the hot path.
        inst = cls.__dict__.get("_instance")
        if inst is None:
            inst = object.__new__(cls)
            cls._instance = inst
        return inst

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __reduce__(self) -> tuple[type, tuple]:
        return (type(self), ())

    def __copy__(self) -> AbstractZero:
        return self

    def __deepcopy__(self, memo: Any) -> AbstractZero:
        return self

    # Addition: the zero is the identity.
    def __add__(self, other: Any) -> Any:
        return other

    def __radd__(self, other: Any) -> Any:
        return other

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            return self
        return -other

    def __rsub__(self, other: Any) -> Any:
        return other

    # Products and quotients with a zero are zero.
    def __mul__(self, other: Any) -> AbstractZero:
        return self

    __rmul__ = __mul__
    __matmul__ = __mul__
    __rmatmul__ = __mul__

    def __truediv__(self, other: Any) -> AbstractZero:
        return self

    def __rtruediv__(self, other: Any) -> Any:
        raise ZeroDivisionError(f"division of {other!r} by the zero tangent {self!r}")

    def __neg__(self) -> AbstractZero:
        return self

    def __pos__(self) -> AbstractZero:
        return self

    def __abs__(self) -> AbstractZero:
        return self

    def __bool__(self) -> bool:
        return False

    def __float__(self) -> float:
        return 0.0

    def __complex__(self) -> complex:
        return 0j

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return hash(type(self))

    # Array-like conveniences so rules can write ``ȳ.conj()`` or ``ȳ.T`` freely.
    def conj(self) -> AbstractZero:
        return self

    conjugate = conj

    @property
    def real(self) -> AbstractZero:
        return self

    @property
    def imag(self) -> AbstractZero:
        return self

    @property
    def T(self) -> AbstractZero:
        return self

    def __getitem__(self, key: Any) -> AbstractZero:
        return self


class ZeroTangent(AbstractZero):
    """The additive identity of every tangent space (a singleton).

    >>> import rulescore as rc
    >>> rc.ZeroTangent() is rc.ZeroTangent()
    True
    >>> rc.ZeroTangent() + rc.Tangent[tuple](1.0, 2.0)
    Tangent[tuple](1.0, 2.0)
    """

    __slots__ = ()


class NoTangent(AbstractZero):
    """Marks that no derivative exists (integers used as indices, bools, strings).

    It behaves like a zero in arithmetic; the AD reports it as ``None``.

    >>> NoTangent() + 1.5
    1.5
    """

    __slots__ = ()


def iszero(x: Any) -> bool:
    """True for the zero tangents ``ZeroTangent()`` and ``NoTangent()``.

    >>> iszero(ZeroTangent()), iszero(0.0)
    (True, False)
    """
    return isinstance(x, AbstractZero)
