"""ad's rules for deleting out of a list or dict: ``del xs[i]``, ``del xs[a:b]``,
``del d[k]``.

The ANF pass spells ``del obj[key]`` as the write ``obj = _ad_delitem(obj, key)``
(one of ``anf_base.IN_PLACE_HELPERS``: the ownership and argument guards judge
it as they judge ``obj[key] = v``), and ``transform.container_methods`` spells
the structural methods of lists and dicts (``pop``, ``remove``, ``clear``, ...)
through it. Deleting is linear in the container: the cotangent of the entries
left goes back to their old positions, the deleted ones get zero; forward mode
deletes the same entries from the tangent. A list or dict subclass's own
``__delitem__`` is differentiated as any method is.
"""

from __future__ import annotations

from typing import Any

from ad.runtime import reverse as _runtime
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries
from ad.runtime.dunders import overriding
from ad.runtime.forward import fcall
from ad.runtime.rules_item_writes import method_write
from ad.runtime.state import (
    Stateful,
    _parts,
    _whole,
    current,
    follow,
    merged_tangent,
    tracked,
    write_tangent,
)
from ad.runtime.tangents import entries as tangent_entries
from ad.runtime.tangents import is_zero, tan_list
from rulescore import (
    AbstractZero,
    NoTangent,
    Tangent,
    ZeroTangent,
    frule,
    non_differentiable,
    rrule,
    unthunk,
)

__all__ = ["deleted_tangent", "delitem", "kept_positions", "last_key"]

_Z = ZeroTangent()
_NO = NoTangent()


def delitem(obj: Any, key: Any) -> Any:
    """``del obj[key]``, returning ``obj`` (the write's rebinding)."""
    del obj[key]
    return obj


def last_key(d: Any) -> Any:
    """The key ``d.popitem()`` takes: the last inserted (``KeyError`` as
    ``popitem``'s when ``d`` is empty)."""
    for k in reversed(d):
        return k
    raise KeyError("popitem(): dictionary is empty")


non_differentiable(last_key)


def kept_positions(n: int, key: Any) -> list[int]:
    """The positions of a list of length ``n`` that ``del xs[key]`` keeps, in order
    (``key`` an index or a slice; Python's own IndexError for one out of range)."""
    positions = list(range(n))
    del positions[key]
    return positions


def deleted_tangent(obj: Any, key: Any, ṫ: Any) -> Any:
    """The tangent of the list or dict ``obj`` (tangent ``ṫ``, before the
    deletion) once ``del obj[key]`` has run on it."""
    if isinstance(obj, list):
        es = tangent_entries(ṫ, len(obj), obj)
        del es[key]
        return tan_list(*es)
    ṫ = unthunk(ṫ)
    if is_zero(ṫ):
        return _Z
    b = dict(ṫ._backing if isinstance(ṫ, Tangent) else ṫ)
    b.pop(key, None)
    return Tangent[dict]._from_backing(b) if b else _Z  # type: ignore[misc]


def followed_delete_pullback(p: Any, obj: Any, kept: list[int] | None, n: int) -> Stateful:
    """The pullback of ``del obj[key]`` out of a followed container (``kept``: the
    positions a list of ``n`` entries kept, None for a dict): what reads after
    the deletion deposited, and the cotangent along the variable, go back to
    the entries' positions before it; a deleted entry's is zero."""

    def before(j: Any) -> Any:
        if kept is None:
            return j
        return kept[j] if j < len(kept) else n + j - len(kept)

    def stateful_delitem_pullback(ȳ: Any) -> tuple:
        for j, ct in p.take_all(obj).items():
            p.deposit(obj, before(j), ct)
        parts = {before(j): ct for j, ct in _parts(obj, ȳ).items()}
        return (_NO, _whole(obj, parts, n), _NO)

    return Stateful(stateful_delitem_pullback)


def _moved_tangents(p: Any, obj: Any, key: Any, ṫ: Any) -> None:
    """Forward mode: the tangents kept by identity for the followed ``obj``'s
    entries once ``del obj[key]`` runs: a list's entries move, so each position
    left keeps its entry's tangent (``ṫ``: the list's, after the deletion); a
    dict's deleted key drops out."""
    written = p.tangents.get(id(obj)) if p.tangents else None
    if isinstance(obj, dict):
        if written:
            written.pop(key, None)
        return
    m = len(kept_positions(len(obj), key))  # obj is deleted from after this
    for j, e in enumerate(tangent_entries(ṫ, m, obj)):
        write_tangent(p, obj, j, e)  # type: ignore[arg-type]  # a list's keys are positions


def _check_kind(obj: Any) -> None:
    if not isinstance(obj, (list, dict)):
        raise TypeError(
            f"cannot differentiate `del` of an item of a {type(obj).__name__} "
            f"(at {_runtime.call_site()}); only lists and dicts are supported"
        )


@rrule.register(delitem, config=ADConfig)
def _(config: Any, obj: Any, key: Any) -> Any:
    if overriding(obj, "__delitem__") is not None:  # a list or dict subclass's own
        return method_write(config, obj, "__delitem__", key)
    _check_kind(obj)
    p = tracked(obj)
    if p is not None:  # followed by identity (ad.runtime.state)
        n = len(obj)
        kept = kept_positions(n, key) if isinstance(obj, list) else None
        del obj[key]
        p.mark(obj)  # a write: the calls it happens in must run their pullbacks
        return obj, followed_delete_pullback(p, obj, kept, n)
    if isinstance(obj, dict):
        del obj[key]

        def dict_delitem_pullback(ȳ: Any) -> tuple:
            # the entries left keep their cotangents; the deleted one gets zero
            return (_NO, unthunk(ȳ), _NO)

        return obj, dict_delitem_pullback
    n = len(obj)
    kept = kept_positions(n, key)
    del obj[key]

    def list_delitem_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ, _NO)
        cts = [_Z] * n
        for i, c in zip(kept, entries(ȳ, len(kept), "a list")):
            cts[i] = c
        return (_NO, cts if n else _Z, _NO)

    return obj, list_delitem_pullback


@frule.register(delitem, config=ADConfig)
def _(config: Any, ḟ: Any, ȯ: Any, k̇: Any, obj: Any, key: Any) -> Any:
    if overriding(obj, "__delitem__") is not None:  # a list or dict subclass's own
        ȯ = merged_tangent(follow(obj), ȯ)  # followed by identity, as a method's receiver
        fcall(obj.__delitem__, (ȯ, _Z), key)
        return obj, ȯ
    _check_kind(obj)
    p = current(forward=True)
    if p is not None and p.written.get(id(obj)) is obj:  # followed by identity
        ṫ = deleted_tangent(obj, key, merged_tangent(obj, ȯ))
        _moved_tangents(p, obj, key, ṫ)
        return delitem(obj, key), ṫ
    ṫ = deleted_tangent(obj, key, ȯ)
    # deleted by the helper, not by ``del``: pushed forward again (a third order)
    # this body runs as source, where the helper's own rules delete once
    obj = delitem(obj, key)
    return obj, ṫ
