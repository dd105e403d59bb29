"""The former name of the demo: examples/mingpt.py (`make demo`)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mingpt import main  # noqa: E402

if __name__ == "__main__":
    main()
