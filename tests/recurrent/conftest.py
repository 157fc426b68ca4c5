"""torch on one thread while these tests run (restored afterwards).

The references here are tiny recurrences stepped 6 to 1,000 times; torch's
intra-op thread pool only adds synchronisation per step, and on a busy
2-core machine that made one 1,000-step LSTM reference take 40 s instead of 0.3 s.
"""
import pytest
import torch


@pytest.fixture(autouse=True, scope="package")
def _torch_single_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
