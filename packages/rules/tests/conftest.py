"""Makes the shared helpers in ``rules_testing.py`` importable by the test modules."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
