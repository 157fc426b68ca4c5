"""The op profiler counts every op call by type and phase, and leaves the engine as it found it."""
from __future__ import annotations

import numpy as np

import seqlab
from seqlab.autograd.function import Function
from seqlab.autograd.profile import OpProfiler
from seqlab.bench.profiling import profile_step


def _apply_methods():
    return {k: Function.__dict__[k] for k in ("apply", "apply_with_fn") if k in Function.__dict__}


def test_counts_forward_and_backward_calls_per_op_type():
    rng = np.random.default_rng(0)
    x = seqlab.Tensor(rng.standard_normal((4, 3)), requires_grad=True)
    w = seqlab.Tensor(rng.standard_normal((3, 2)), requires_grad=True)
    with OpProfiler() as prof:
        with prof.phase("forward"):
            h = (x @ w).tanh()
            loss = (h * h).sum() + (x @ w).sum()
        with prof.phase("backward"):
            loss.backward()
    calls = {k: s.calls for k, s in prof.stats.items()}
    assert calls[("MatMul", "forward")] == 2 and calls[("MatMul", "backward")] == 2
    assert calls[("Tanh", "forward")] == 1 and calls[("Tanh", "backward")] == 1
    assert calls[("Mul", "forward")] == 1 and calls[("Sum", "forward")] == 2 and calls[("Add", "backward")] == 1
    assert all(s.seconds >= 0 for s in prof.stats.values())
    assert prof.op_seconds("forward") <= prof.phases["forward"]
    table = prof.table()
    assert "MatMul" in table and "backward" in table
    # the gradients are those of an unprofiled run
    x2, w2 = seqlab.Tensor(x.data, requires_grad=True), seqlab.Tensor(w.data, requires_grad=True)
    h2 = (x2 @ w2).tanh()
    ((h2 * h2).sum() + (x2 @ w2).sum()).backward()
    np.testing.assert_array_equal(x.grad, x2.grad)
    np.testing.assert_array_equal(w.grad, w2.grad)


def test_restores_the_engine_and_records_nothing_outside():
    before = _apply_methods()
    with OpProfiler() as prof:
        assert _apply_methods() != before
    assert _apply_methods() == before
    x = seqlab.Tensor(np.ones(3), requires_grad=True)
    y = x * 2
    assert "backward" not in vars(y._ctx)  # ops made afterwards are plain: no timed backward
    y.sum().backward()
    assert not prof.stats  # nothing recorded after the block


def test_no_grad_ops_are_counted_once_without_backward():
    with seqlab.no_grad(), OpProfiler() as prof:
        seqlab.Tensor(np.ones((2, 2))).exp().sum()
    assert {k for k in prof.stats} == {("Exp", "forward"), ("Sum", "forward")}


def test_profile_step_runs_warmup_outside_the_profiler():
    seen = []

    def step(prof):
        with prof.phase("forward"):
            seen.append(seqlab.Tensor(np.ones(2), requires_grad=True).sum())

    prof, steps = profile_step(step, steps=2, warmup=1)
    assert len(seen) == 3 and steps == 2
    assert prof.stats[("Sum", "forward")].calls == 2


def test_profile_step_warms_up_as_many_steps_as_the_benchmarks_do():
    """One warm-up step left the second step's page faults (the allocator's pool still growing) in
    `seqlab bench encoder-train --profile`'s table: GELU and dropout read 2.5x their time."""
    import inspect

    from seqlab.bench.harness import compare

    profiled = []
    profile_step(lambda prof: profiled.append(isinstance(prof, OpProfiler)), steps=1)
    benchmark_warmup = inspect.signature(compare).parameters["warmup"].default
    assert benchmark_warmup >= 2
    assert profiled == [False] * benchmark_warmup + [True]


def test_profiled_graph_is_freed_without_the_cyclic_gc():
    """The timed backward an op gets must not hold the op: a cycle would keep every op's saved
    arrays alive until the cyclic GC ran, and the profiled steps would pay for memory a plain step
    reuses (it made `seqlab bench encoder-train --profile` report GELU 5x slower than it is)."""
    import gc
    import weakref

    rng = np.random.default_rng(0)
    x = seqlab.Tensor(rng.standard_normal((4, 3)), requires_grad=True)
    w = seqlab.Tensor(rng.standard_normal((3, 2)), requires_grad=True)
    gc.disable()
    try:
        with OpProfiler() as prof:
            for run_backward in (False, True):
                h = (x @ w).tanh()
                op = weakref.ref(h._ctx)
                saved = weakref.ref(h._ctx.saved[0])  # tanh keeps its output for backward
                assert "backward" in vars(h._ctx)  # the profiler's timed backward is in place
                loss = (h * h).sum()
                if run_backward:
                    loss.backward()
                del h, loss
                assert op() is None and saved() is None  # freed by reference counting alone
    finally:
        gc.enable()
    assert prof.stats[("Tanh", "forward")].calls == 2 and prof.stats[("Tanh", "backward")].calls == 1


def test_dropout_masks_are_timed_as_their_own_row_and_unpatched_after():
    import seqlab.functional as F

    original = F._keep_mask
    x = seqlab.Tensor(np.ones((1, 2, 8, 16), dtype=np.float32), requires_grad=True)

    def attend():
        return F.scaled_dot_product_attention(x, x, x, dropout_p=0.5)

    seqlab.manual_seed(0)
    plain = attend().data
    seqlab.manual_seed(0)
    with OpProfiler() as prof:
        with prof.phase("forward"):
            y = attend()  # attention's dropout draws its mask: the DropoutMask row
            F.dropout(x, 0.0)  # p = 0 draws nothing
            F.dropout(x, 0.5)  # plain dropout makes its mask inside its op (from one word of the generator)
    assert F._keep_mask is original  # put back
    assert prof.stats[("DropoutMask", "forward")].calls == 1
    assert prof.stats[("Attention", "forward")].calls == 1 and prof.stats[("Dropout", "forward")].calls == 1
    assert prof.op_seconds("forward") <= prof.phases["forward"]
    np.testing.assert_array_equal(y.data, plain)  # the same random bits as unprofiled
