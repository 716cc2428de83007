"""The pytest plugin: a failing rule check renders as a short report at the caller's line."""

from __future__ import annotations

# Enabled here rather than in a conftest.py: pytest refuses ``pytest_plugins`` in
# a conftest below the rootdir when the whole repository is collected at once.
pytest_plugins = ["pytester"]

DEMO = """
import pytest
from rulescore import rrule, NoTangent
from rulestest import test_rrule

def triple(x):
    return 3.0 * x

@rrule.register(triple)
def _(x: float):
    def triple_pullback(ȳ):
        return NoTangent(), 2.0 * ȳ
    return triple(x), triple_pullback

@pytest.mark.parametrize("x", [0.5, 1.5])
def test_triple(x):
    test_rrule(triple, x, output_tangent=1.0)

def test_other_failures_are_untouched():
    assert 1 == 2
"""


def test_failure_is_a_short_report_at_the_call_site(pytester):
    pytester.makepyfile(test_demo=DEMO)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "RuleTestFailure: test_rrule(triple, 0.5): the cotangent for args[[]0] disagrees "
            "with finite differences (J'ȳ):",
            "  expected: 2.99999*",
            "  actual:   2.0*",
            "  max abs error 1*",
            "    test_rrule(triple, x, output_tangent=1.0)",
            "test_demo.py:*: in test_triple",
        ]
    )
    out = result.stdout.str()
    assert "_testers.py" not in out and "_checks.py" not in out
    assert "assert 1 == 2" in out  # ordinary failures keep pytest's report
    result.stdout.fnmatch_lines(["FAILED test_demo.py::test_triple[[]1.5[]] - RuleTestFailure: *"])


def test_tb_long_keeps_the_usual_traceback(pytester):
    pytester.makepyfile(test_demo=DEMO)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--tb=long", "-k", "triple")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["E   *RuleTestFailure: test_rrule(triple, 0.5): the cotangent*"])


def test_passing_rules_pass(pytester):
    pytester.makepyfile(test_demo=DEMO.replace("2.0 * ȳ", "3.0 * ȳ"))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-k", "triple")
    result.assert_outcomes(passed=2)
