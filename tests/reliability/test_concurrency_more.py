"""More thread cases (tests/python/test_concurrency.py has the fast ones):
the reader/writer race in Fused eager, and threads on two devices
(TORCH_TPU_NUM_DEVICES=2) in Fused and Strict eager."""
import pytest

from test_concurrency import check_reader_writer, check_two_devices


def test_reader_while_another_thread_writes_fused():
    check_reader_writer("fused")


@pytest.mark.parametrize("mode", ["fused", "strict"])
def test_two_devices_from_four_threads(mode):
    check_two_devices(mode)
