# The reliability tests share tests/python's helpers (harness.py) and its
# conftest (device set-up, fallback reset).
import os
import sys

_PY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
sys.path.insert(0, _PY)
from conftest import *  # noqa: E402,F401,F403
