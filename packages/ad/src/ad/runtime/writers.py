"""What generated code calls for numpy's in-place functions (``transform.writers``
spells ``np.put_along_axis(a, ...)`` as ``a = _ad_wf1(a, ...)``).

``writer(f)`` is the functional form of ``f`` (``rules.functional``), which the
AD differentiates through its rules (``method_form(name)`` that of an ndarray
method, ``a.fill(v)`` as ``copyto``'s, ``a.sort()`` as ``np.sort``); ``in_place(form, a, ...)`` is the same
write undifferentiated: the new value goes into ``a``'s own memory, so that
views of ``a`` and other names holding it see it, as in plain Python.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rules.functional import functional_form

__all__ = ["in_place", "method_form", "writer"]

#: The ndarray methods that write their array (``transform.writers``), each as a
#: function of the array returning the array it leaves: numpy's function of the
#: same name and signature with the array first, or the functional form of one.
_METHOD_FORMS = {
    "fill": functional_form(np.copyto),
    "partition": np.partition,
    "put": functional_form(np.put),
    "sort": np.sort,
}


def writer(f: Any) -> Any:
    """The functional form of the in-place numpy function ``f``; if ``f`` is no
    longer one (a name rebound since the transform), a function that calls ``f``
    in place and returns its first argument: as plain Python, which the AD
    refuses where it would lose a derivative (``ad.runtime.plain_calls``)."""
    form = functional_form(f)
    if form is not None:
        return form

    def write_in_place(a: Any, *args: Any, **kwargs: Any) -> Any:
        f(a, *args, **kwargs)
        return a

    write_in_place.__qualname__ = getattr(f, "__qualname__", repr(f))
    return write_in_place


def in_place(form: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    """``a``, holding ``form(a, *args, **kwargs)``: the write, undifferentiated."""
    new = form(a, *args, **kwargs)
    if new is not a:
        a[...] = new
    return a


def method_form(name: str) -> Any:
    """The functional form of the ndarray method ``name`` (``a.sort(...)`` is
    ``np.sort(a, ...)``): a new array, equal to what the method leaves in ``a``."""
    return _METHOD_FORMS[name]
