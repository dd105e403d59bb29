import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import tempfile  # noqa: E402

# Hermetic runs: a fresh persistent compilation cache per test session
# unless the caller chose one (tests that need a shared one set their own).
os.environ.setdefault("TORCH_TPU_CACHE_DIR", tempfile.mkdtemp(prefix="torch_tpu_test_cache_"))

import pytest  # noqa: E402
import torch  # noqa: E402

import torch_tpu  # noqa: E402,F401


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield
