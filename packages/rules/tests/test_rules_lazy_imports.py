"""``import rules`` imports no scipy; scipy's rules register when scipy's modules are imported."""

import subprocess
import sys


def test_import_rules_imports_no_scipy():
    code = (
        "import sys, rules\n"
        "loaded = [m for m in sys.modules if m.startswith('scipy')]\n"
        "assert not loaded, f'import rules imported {loaded}'\n"
        "import numpy as np, scipy.special, scipy.linalg\n"
        "from rulescore import rrule\n"
        "assert rrule(scipy.special.gammaln, 2.0) is not None\n"
        "assert rrule(scipy.linalg.expm, np.eye(2)) is not None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_inventory_lists_the_lazy_modules_without_importing_them_first():
    code = (
        "import rules\n"
        "mods = {e.module for e in rules.inventory()}\n"
        "assert {'scipy.special', 'scipy.linalg', 'scipy.stats'} <= mods, mods\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
