"""Import ``rules`` and check that it is this project's, before ad uses it.

The import name ``rules`` is also Django's ``rules`` on PyPI, which pip installs
when an install command leaves ``./packages/rules`` out. Without this check
``import ad`` would die on a confusing ``cannot import name '_numpy_elementwise'
from 'rules'``. The check is one attribute read when the import works; the
error (and the file and metadata reads that name the stranger) costs only on the
failing path.
"""

from __future__ import annotations

import os

__all__: list[str] = []


def wrong_rules(where: str | None) -> ImportError:
    """The error for an import name ``rules`` that is not this project's, or none."""
    if where is None:
        what = "no module named 'rules' is installed"
    else:
        what = f"the module 'rules' imported from {where} is another project's"
        try:
            from importlib.metadata import packages_distributions, version

            names = packages_distributions().get("rules", [])
            if names:
                what += f" (the distribution {names[0]} {version(names[0])})"
        except Exception:  # naming the stranger is a courtesy: the error stands without
            pass
    return ImportError(
        "import ad: ad runs on this project's derivative rules (import name 'rules', "
        f"distribution chainrules-rules), but {what}. The name 'rules' on PyPI is "
        "Django's, and pip installs it when ./packages/rules is left out of the install "
        "command.\nTo fix: from the root of the repository, run "
        "python -m pip uninstall --yes rules && "
        "python -m pip install ./packages/rulescore ./packages/rules ./packages/ad"
    )


def is_ours(module: object) -> bool:
    """Whether ``module`` is this project's ``rules``: its ``inventory()`` is defined in
    ``rules._inventory`` (Django's has none)."""
    return getattr(getattr(module, "inventory", None), "__module__", None) == "rules._inventory"


try:
    import rules
except ImportError as e:
    import importlib.util

    spec = importlib.util.find_spec("rules") if e.name != "rules" else None
    if spec is None or spec.origin is None:
        raise wrong_rules(None) from None
    # Ours has its inventory beside it: an ImportError inside it is a bug, raised as is.
    if not os.path.isfile(os.path.join(os.path.dirname(spec.origin), "_inventory.py")):
        raise wrong_rules(spec.origin) from e
    raise
if not is_ours(rules):
    raise wrong_rules(getattr(rules, "__file__", None) or repr(rules))
