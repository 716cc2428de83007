"""A new user's first contact with ad (issue 22): a wrong install says what happened
and how to repair it, tracebacks and warnings point at the user's lines, functions
typed at the plain interactive prompt can be differentiated, and ``ad.__all__``
names only public things."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import traceback
import warnings
from pathlib import Path

import numpy as np
import pytest

import ad
from ad.runtime import tracebacks as _tracebacks

HERE = os.path.abspath(__file__)
PACKAGES = Path(__file__).resolve().parents[2]


def _run(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=full,
    )


# --- installing --------------------------------------------------------------------


def test_a_foreign_rules_module_is_named_with_the_command_that_repairs_it():
    r = _run(
        """
        import sys, types
        fake = types.ModuleType("rules")
        fake.__file__ = "/somewhere/site-packages/rules/__init__.py"
        fake.VERSION = (3, 5, 0, "final", 1)  # Django's rules
        sys.modules["rules"] = fake
        try:
            import ad
        except ImportError as e:
            print("MESSAGE:", e)
        else:
            print("imported")
        """
    )
    out = r.stdout
    assert "MESSAGE:" in out, r.stdout + r.stderr
    assert "/somewhere/site-packages/rules/__init__.py is another project's" in out
    assert "chainrules-rules" in out
    assert (
        "To fix: from the root of the repository, run python -m pip uninstall --yes rules && "
        "python -m pip install ./packages/rulescore ./packages/rules ./packages/ad"
    ) in out


def test_a_foreign_rules_package_that_fails_to_import_is_named_too(tmp_path):
    # Django's rules imports Django's modules: without Django it fails on its own.
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "__init__.py").write_text("import django_is_not_installed_here\n")
    r = _run(
        """
        try:
            import ad
        except ImportError as e:
            print("MESSAGE:", e)
            print("CAUSE:", type(e.__cause__).__name__)
        """,
        env={"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])},
    )
    out = r.stdout
    assert f"{tmp_path / 'rules' / '__init__.py'} is another project's" in out, out + r.stderr
    assert "To fix:" in out
    assert "CAUSE: ModuleNotFoundError" in out


def test_a_missing_rules_module_is_named():
    r = _run(
        """
        import sys
        sys.modules["rules"] = None  # as if it were not installed
        try:
            import ad
        except ImportError as e:
            print("MESSAGE:", e)
        """
    )
    assert "no module named 'rules' is installed" in r.stdout, r.stdout + r.stderr
    assert "python -m pip install ./packages/rulescore ./packages/rules ./packages/ad" in r.stdout


def test_the_installed_rules_is_recognised_as_ours():
    from ad.runtime import rules_check as _check_rules

    assert _check_rules.is_ours(sys.modules["rules"])
    assert not _check_rules.is_ours(np)


def test_distributions_pin_each_other_and_never_name_a_stranger():
    tomllib = pytest.importorskip("tomllib")
    names = {}
    deps = {}
    for pkg in ("rulescore", "rules", "rulestest", "ad"):
        project = tomllib.loads((PACKAGES / pkg / "pyproject.toml").read_text())["project"]
        names[pkg] = project["name"]
        deps[pkg] = project.get("dependencies", [])
    assert names == {p: f"chainrules-{p}" for p in names}
    for pkg, reqs in deps.items():
        for req in reqs:
            base = req.split(">")[0].split("<")[0].split("=")[0].strip()
            assert base not in ("ad", "rules", "rulescore", "rulestest"), (pkg, req)
            if base.startswith("chainrules-"):
                assert ">=0.1.0" in req and "<0.2" in req, (pkg, req)
    assert "pytest" not in " ".join(deps["ad"] + deps["rules"] + deps["rulescore"])


# --- public names --------------------------------------------------------------------


def test_all_names_only_public_things():
    assert all(not name.startswith("_") for name in ad.__all__)
    assert all(hasattr(ad, name) for name in ad.__all__)
    assert len(set(ad.__all__)) == len(ad.__all__)
    assert callable(ad._pullback)  # internal, still importable as such


# --- tracebacks ----------------------------------------------------------------------


def _frames(e: BaseException) -> list[traceback.FrameSummary]:
    return list(traceback.extract_tb(e.__traceback__))


def _internal(frame: traceback.FrameSummary) -> bool:
    return _tracebacks.internal_file(frame.filename)


def _check_filtered(e: BaseException) -> list[traceback.FrameSummary]:
    """Only the innermost frame may be ad's, rules' or rulescore's (3.10: the entry
    point's own frame too, which re-raises there)."""
    frames = _frames(e)
    internal = [f for f in frames[:-1] if _internal(f)]
    allowed = 1 if sys.version_info < (3, 11) else 0
    assert len(internal) <= allowed, [(f.filename, f.name) for f in frames]
    return frames


def helper_dot(x):
    return np.dot(x, np.ones(3))  # shapes (2,) and (3,): the rule raises


def loss_with_bad_shapes(x):
    y = helper_dot(x) * 2
    return np.sum(y)


def loss_indexing_out_of_range(x):
    return [x, x][5]


def _line_of(fn, text: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_an_error_in_a_rule_shows_the_user_lines_and_the_innermost_frame_only():
    with pytest.raises(ValueError, match="not aligned") as info:
        ad.gradient(loss_with_bad_shapes, np.ones(2))
    frames = _check_filtered(info.value)
    assert _internal(frames[-1])  # where numpy's error surfaced: the rule
    mine = [(f.filename, f.lineno) for f in frames if f.filename == HERE]
    assert (HERE, _line_of(loss_with_bad_shapes, "helper_dot(x) * 2")) in mine
    assert len(frames) <= 5


def test_type_message_and_cause_are_unchanged(monkeypatch):
    def run() -> BaseException:
        with pytest.raises(IndexError) as info:
            ad.gradient(loss_indexing_out_of_range, 1.0)
        return info.value

    filtered = run()
    monkeypatch.setenv("AD_TRACEBACK", "full")
    full = run()
    assert type(filtered) is type(full) and str(filtered) == str(full)
    assert filtered.__cause__ is None and full.__cause__ is None
    assert len(_frames(full)) > len(_frames(filtered))
    assert sum(_internal(f) for f in _frames(full)[:-1]) >= 3  # everything kept


def test_nested_calls_filter_once_and_keep_both_levels_of_user_lines():
    def outer(x):
        return np.sum(ad.gradient(loss_with_bad_shapes, x)[0])  # the inner call

    with pytest.raises(ValueError, match="not aligned") as info:
        ad.gradient(outer, np.ones(2))
    frames = _check_filtered(info.value)
    lines = {f.lineno for f in frames if f.filename == HERE}
    assert _line_of(outer, "the inner call") in lines
    assert _line_of(loss_with_bad_shapes, "helper_dot(x) * 2") in lines


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda: ad.withgradient(loss_indexing_out_of_range, 1.0), id="withgradient"),
        pytest.param(lambda: ad.pullback(loss_indexing_out_of_range, 1.0), id="pullback"),
        pytest.param(lambda: ad.jvp(loss_indexing_out_of_range, (1.0,), (1.0,)), id="jvp"),
        pytest.param(lambda: ad.pushforward(loss_indexing_out_of_range, 1.0)(1.0), id="pushfwd"),
        pytest.param(lambda: ad.grad(loss_indexing_out_of_range)(1.0), id="grad"),
        pytest.param(lambda: ad.value_and_grad(loss_indexing_out_of_range)(1.0), id="v_and_g"),
        pytest.param(lambda: ad.hessian(loss_indexing_out_of_range, 1.0), id="hessian"),
        pytest.param(lambda: ad.hvp(loss_indexing_out_of_range, (1.0,), (1.0,)), id="hvp"),
        pytest.param(lambda: ad.diaghessian(loss_indexing_out_of_range, 1.0), id="diaghessian"),
        pytest.param(lambda: ad.hessian_reverse(loss_indexing_out_of_range, 1.0), id="hess_rev"),
        pytest.param(lambda: ad.jacobian(loss_indexing_out_of_range, 1.0), id="jacobian"),
        pytest.param(lambda: ad.withjacobian(loss_indexing_out_of_range, 1.0), id="withjacobian"),
        pytest.param(
            lambda: ad.jacobian(loss_indexing_out_of_range, 1.0, mode="forward"), id="jac_fwd"
        ),
    ],
)
def test_every_entry_point_filters(call):
    with pytest.raises(IndexError) as info:
        call()
    frames = _check_filtered(info.value)
    assert any(f.filename == HERE and "[5]" in (f.line or "") for f in frames)


def test_the_pullback_filters_errors_of_the_backward_pass():
    def loss(x):
        return x * 2.0

    _y, back = ad.pullback(loss, np.ones(2))
    with pytest.raises(Exception) as info:  # a seed of the wrong shape
        back(np.ones(5))
    _check_filtered(info.value)


def test_an_error_the_user_raises_keeps_the_user_frame_innermost():
    def refuses(x):
        raise ValueError("mine")  # the user's own error

    with pytest.raises(ValueError, match="^mine$") as info:
        ad.gradient(refuses, 1.0)
    frames = _check_filtered(info.value)
    assert frames[-1].filename == HERE and "the user's own error" in frames[-1].line


# --- warnings -----------------------------------------------------------------------


def sqrt_at_zero(x):
    return np.sqrt(x[0]) + x[1]  # d sqrt / dx at 0 divides by zero


def test_a_warning_raised_in_a_rule_points_at_the_user_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = ad.gradient(sqrt_at_zero, np.array([0.0, 1.0]))[0]
    assert np.isinf(g[0])
    ours = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert ours, [str(w.message) for w in caught]
    for w in ours:
        assert w.filename == HERE, (w.filename, w.lineno)
        assert w.lineno == _line_of(sqrt_at_zero, "np.sqrt(x[0])")
        assert "divide by zero" in str(w.message)
        assert "rules/" in str(w.message) and "while differentiating this line" in str(w.message)


def test_warnings_outside_ad_are_untouched():
    def plain(x):
        warnings.warn("a warning of mine", UserWarning, stacklevel=1)  # in differentiated code
        return x * 2.0

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("no ad here", UserWarning, stacklevel=1)
        np.sqrt(np.zeros(1)) / np.zeros(1)
        ad.gradient(plain, 1.0)
    texts = [str(w.message) for w in caught]
    assert "no ad here" in texts and "a warning of mine" in texts
    assert all(w.filename == HERE for w in caught)
    assert not any("while differentiating" in t for t in texts)


def test_a_rule_called_directly_keeps_its_warning_as_it_is():
    from rulescore import rrule

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _y, pb = rrule(np.sqrt, np.zeros(1))
        pb(np.ones(1))
    texts = [str(w.message) for w in caught]
    assert any("divide by zero" in t for t in texts), texts
    assert all(_tracebacks.internal_file(w.filename) for w in caught)
    assert not any("while differentiating" in t for t in texts)


# --- the plain interactive prompt -----------------------------------------------------

_PROMPT = r'''
import readline
import ad

def typed(statement, history=None):
    """As the plain prompt runs a statement: its lines go into the readline history
    (one of two equal consecutive lines only; no blank lines), then it is compiled
    as file <stdin> in "single" mode."""
    for line in history if history is not None else statement.splitlines():
        if line.strip() and readline.get_history_item(readline.get_current_history_length()) != line:
            readline.add_history(line)
    exec(compile(statement + "\n", "<stdin>", "single"), globals())

typed("def f(x):\n    return x * x\n")
typed("h = f")
typed("def f(x):\n    return x * x * x\n")
print("old f", ad.gradient(h, 2.0))
print("new f", ad.gradient(f, 2.0))
typed("g = ad.gradient(lambda x: 3 * x**2 + 2 * x + 1, 5)")
print("lambda", g)
typed("def twice(x):\n    x = x * 2\n    x = x * 2\n    return x\n")
try:
    ad.gradient(twice, 1.0)
except ad.NoSourceError as e:
    print("refused", e)
typed("def edited(x):\n    return x + x\n", history=["def edited(x):", "    return x * x"])
try:
    ad.gradient(edited, 1.0)
except ad.NoSourceError as e:
    print("refused edited")
'''


def test_functions_typed_at_the_plain_prompt_are_read_back_from_history_or_refused():
    pytest.importorskip("readline")
    r = _run(_PROMPT)
    out = r.stdout
    assert "old f (4.0,)" in out, out + r.stderr
    assert "new f (12.0,)" in out
    assert "lambda (32.0,)" in out
    # readline dropped a repeated line: the history no longer compiles to `twice`
    assert "refused cannot differentiate twice (<stdin>:1)" in out
    assert "readline" in out and "Python 3.13+" in out and "To fix:" in out
    assert "refused edited" in out
