"""The exception rulestest raises when a rule fails a check."""

from __future__ import annotations

__all__ = ["RuleTestFailure"]


class RuleTestFailure(AssertionError):
    """A rule disagrees with finite differences, or returned an invalid tangent.

    The message is the whole report: which check, which argument (with a path
    into structures such as ``args[1].x``), expected and actual values, the
    largest absolute and relative errors, shapes and dtypes. It subclasses
    ``AssertionError`` so that test runners report it as a test failure.
    """

    def __init__(self, message: str, *, check: str = "", path: str = "") -> None:
        super().__init__(message)
        self.check = check
        self.path = path
