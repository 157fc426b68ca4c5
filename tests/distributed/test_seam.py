"""TorchDistributed in this process as a world of one (gloo): the flat buffer, has-gradient flags, the seam."""
import socket

import numpy as np
import pytest

dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from seqlab import Tensor  # noqa: E402
from seqlab.train.distributed import TorchDistributed  # noqa: E402


@pytest.fixture
def world_of_one(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for k, v in {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
                 "MASTER_PORT": str(port)}.items():
        monkeypatch.setenv(k, v)
    d = TorchDistributed(timeout_s=60)
    yield d
    d.close()
    assert not dist.is_initialized()


def _param(shape, dtype, grad=True, seed=0):
    rng = np.random.default_rng(seed)
    p = Tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
    p.grad = rng.standard_normal(shape).astype(dtype) if grad else None
    return p


def test_grads_come_back_unchanged_as_views_of_one_buffer_per_dtype(world_of_one):
    d = world_of_one
    assert (d.rank, d.world_size, d.is_main, d.backend) == (0, 1, True, "gloo")
    ps = [_param((3, 4), np.float32, seed=1), _param((4,), np.float32, seed=2), _param((2, 2), np.float64, seed=3),
          _param((5,), np.float32, grad=False)]
    before = [None if p.grad is None else p.grad.copy() for p in ps]
    for _ in range(2):  # the second call reuses the buffers
        d.all_reduce_grads(ps)
        for p, g in zip(ps, before):
            if g is None:
                assert p.grad is None  # no gradient on any rank: the optimizer must still skip it
            else:
                assert p.grad.dtype == g.dtype and p.grad.shape == g.shape and np.array_equal(p.grad, g)
        assert len(d._buffers) == 2  # float32 and float64
        buffers = [buf for _, buf, _ in d._buffers.values()]
        for p in ps[:3]:  # handed back without a copy
            assert sum(np.shares_memory(p.grad, buf) for buf in buffers) == 1


def test_scalars_stop_agreement_and_shard_pass_through(world_of_one):
    d = world_of_one
    assert d.all_reduce_mean(0.25) == 0.25
    assert d.agree_stop(None, False) == (None, False)
    assert d.agree_stop("interrupted", True) == ("interrupted", True)
    assert d.agree_stop("custom", False) == ("custom", False)
    batch = {"x": np.arange(6)}
    assert d.shard(batch) is batch
    d.barrier()
