"""Exceptions raised by ad. Each also inherits the builtin users already catch."""

from __future__ import annotations

from rulescore import CotangentError

__all__ = [
    "ADError",
    "CotangentShapeError",
    "CotangentWriteError",
    "MutationError",
    "NoRuleError",
    "NoSourceError",
    "NonScalarOutputError",
    "OutputTypeError",
    "ParamsError",
    "UnsupportedSyntaxError",
]


class ADError(Exception):
    """Base class of every error raised by ad.

    ``from_values``: whether the error is an entry point's check of the values a
    function returned (``NonScalarOutputError``, ``OutputTypeError``), which the
    same call raises when it runs plainly, so that a ``try`` in differentiated code
    catches it as plain Python does (a nested ``ad.gradient`` of a function with a
    vector output). Any other ``ADError`` says the derivative cannot be computed,
    and a differentiated ``try`` never takes it for the user's exception.
    """

    from_values = False


class NoRuleError(ADError, TypeError):
    """A function has no rrule and no Python source to transform."""


class NoSourceError(NoRuleError):
    """The source of a Python function cannot be found (exec, C, interactive)."""


class UnsupportedSyntaxError(ADError, SyntaxError):
    """Differentiated code uses syntax the transform does not support."""

    def __init__(self, msg: str, filename: str | None = None, lineno: int | None = None) -> None:
        super().__init__(msg)
        self.msg = msg
        self.filename = filename
        self.lineno = lineno

    def __str__(self) -> str:
        return self.msg


class NonScalarOutputError(ADError, TypeError):
    """``gradient`` was asked for a function whose output is not a real number."""

    from_values = True


class CotangentShapeError(ADError, CotangentError):
    """A pullback returned the wrong number of cotangents, or one of the wrong shape
    (a ``rulescore.CotangentError``, as a rule raises for a cotangent it cannot take)."""


class MutationError(ADError, RuntimeError):
    """In-place mutation that would corrupt values the backward pass needs."""


class CotangentWriteError(MutationError, ValueError):
    """A rule's pullback wrote into the cotangent it received: cotangents may be
    read-only (a whole-array sum's) or shared with another input."""


class OutputTypeError(ADError, TypeError):
    """The function's output has a type the entry point cannot differentiate
    (e.g. ``jacobian`` of a function returning a dict or a string)."""

    from_values = True


class ParamsError(ADError, ValueError):
    """Implicit parameters (``ad.Params``) whose gradient cannot be found, e.g. an
    array the loss reads as a module-level global."""
