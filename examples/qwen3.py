"""Reference example: a Hugging Face Qwen3 (from a small config, random
weights) trained on on-machine text, then generating. Run
`python examples/qwen3.py` (tpu), `--device cpu` to compare, `--smoke` for a
few steps; `--steps/--layers/--hidden/--seq/--batch/--new-tokens` size it."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _hf_lm import main as _main  # noqa: E402


def main(argv=None):
    return _main("qwen3", argv)


if __name__ == "__main__":
    main()
