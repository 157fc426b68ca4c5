"""Run one benchmark by name: time both libraries in alternating rounds, return a `BenchResult`."""
from __future__ import annotations

import statistics
from dataclasses import asdict

from seqlab import mkl as seqlab_mkl
from seqlab.bench import attention_long, bert_infer, encoder_train, gemm, gpt_generate, gpt_train, memory
from seqlab.bench.device import CUDA_NAMES, DEVICES, syncs
from seqlab.bench.harness import compare, load_average
from seqlab.bench.result import BenchResult, ms, ratio

MODULES = {m.NAME: m for m in (encoder_train, gpt_train, bert_infer, gpt_generate, attention_long, gemm)}
HEADERS = ["benchmark", "seqlab ms", "torch ms", "seqlab / torch", "CPU-time ratio", "load before → after"]
# on a GPU: throughput instead of CPU time (the host only waits) and load (a lent machine runs nothing else)
GPU_HEADERS = ["benchmark", "seqlab ms", "torch ms", "seqlab / torch", "seqlab tokens/s", "torch tokens/s"]
SIZED = {m.NAME: m for m in (encoder_train, gpt_train)}  # the benchmarks with SIZES ("default", "large")
SIZE_NAMES = ("default", "large")


def _row(name: str, t, before: str) -> list:
    """One table row: wall medians, their ratio, the ratio of CPU-time medians, the load."""
    return [name, ms(t.seqlab_s), ms(t.torch_s), ratio(t.seqlab_s, t.torch_s), f"{t.cpu_ratio:.2f}",
            f"{before} → {load_average()}"]


def _data(t) -> dict:
    return {"seqlab_s": t.seqlab_s, "torch_s": t.torch_s, "seqlab_all": t.seqlab_all, "torch_all": t.torch_all,
            "seqlab_cpu_s": t.seqlab_cpu_s, "torch_cpu_s": t.torch_cpu_s}


def _tokens(c) -> int:
    """Tokens in one training step: batch × sequence length (padding included)."""
    return c.batch * (c.seq_len if hasattr(c, "seq_len") else c.block_size)


def _gpu_result(mod, c, size: str, t, flops: float) -> BenchResult:
    """The --device cuda row: times, their ratio and both throughputs; notes with TFLOP/s and memory."""
    from seqlab.bench.device import memory_peaks

    n = _tokens(c)
    s_tps, t_tps = n / t.seqlab_s, n / t.torch_s
    peaks = memory_peaks()
    row = [mod.NAME, ms(t.seqlab_s), ms(t.torch_s), ratio(t.seqlab_s, t.torch_s), f"{s_tps:,.0f}", f"{t_tps:,.0f}"]
    notes = [f"{n:,} tokens per step; seqlab runs at {100 * t.torch_s / t.seqlab_s:.0f}% of torch's throughput",
             f"{flops / 1e12:.2f} TFLOP of matrix products per step (forward + backward): seqlab "
             f"{flops / t.seqlab_s / 1e12:.1f} TFLOP/s, torch {flops / t.torch_s / 1e12:.1f} TFLOP/s (float32)",
             f"GPU memory after the run: CuPy's pool holds {peaks['seqlab_bytes'] / 2 ** 30:.1f} GiB, "
             f"torch's peak allocation {peaks['torch_peak_bytes'] / 2 ** 30:.1f} GiB"]
    data = {**_data(t), "device": "cuda", "size": size, "config": asdict(c), "tokens_per_step": n,
            "seqlab_tokens_per_s": s_tps, "torch_tokens_per_s": t_tps, "flops": flops, **peaks}
    return BenchResult(mod.NAME, mod.describe(c, size, "cuda"), GPU_HEADERS, [row], notes, data)


def _with_memory(res: BenchResult, name: str, threads: int | None, data_dir=None) -> None:
    """Add both libraries' step peak memory (`seqlab.bench.memory`, fresh processes) to a CPU result."""
    mem = memory.compare(name, threads, data_dir=data_dir)
    res.notes.append(memory.note(mem))
    res.data["memory"] = mem


def _train(mod, rounds: int, extra=None, device: str = "cpu", size: str = "default") -> BenchResult:
    before = load_average()
    c = mod.SIZES[size]
    if device != "cpu":
        from seqlab.bench.device import release

        release()  # the previous benchmark's GPU memory back, torch's peak counter reset
    fs, ft, _, _ = mod.build(c, device=device)
    sync_seqlab, sync_torch = syncs(device)
    t = compare(fs, ft, rounds=rounds, warmup=2, min_time=0.0, settle=0.3 if device == "cpu" else 0.0, wake=False,
                sync_seqlab=sync_seqlab, sync_torch=sync_torch)
    if device != "cpu":
        return _gpu_result(mod, c, size, t, mod.train_flops(c))
    res = BenchResult(mod.NAME, mod.describe(c, size), HEADERS, [_row(mod.NAME, t, before)],
                      data={**_data(t), "device": "cpu", "size": size, "config": asdict(c)})
    if extra:
        extra(res, t, c, fs)
    return res


def run_encoder_train(rounds: int = 7, device: str = "cpu", size: str = "default", **_) -> BenchResult:
    def gflops(res: BenchResult, t, c, step) -> None:
        f = encoder_train.train_flops(c)
        peak, peak_cpu = gemm.numpy_rates()
        paired = gemm.paired_fractions(step, f, rounds)
        s_rate, t_rate = f / t.seqlab_s, f / t.torch_s
        s_cpu, t_cpu = f / t.seqlab_cpu_s, f / t.torch_cpu_s
        res.data.update(flops=f, numpy_gemm_flops_per_s=peak, numpy_gemm_cpu_flops_per_s=peak_cpu,
                        seqlab_flops_per_s=s_rate, torch_flops_per_s=t_rate, paired_gemm_fractions=paired)
        res.notes.append(
            f"{f / 1e9:.1f} GFLOP of matrix products per step (forward + backward). By wall time: seqlab "
            f"{s_rate / 1e9:.1f} GFLOP/s = {100 * s_rate / peak:.0f}% of the measured float32 GEMM rate "
            f"of seqlab's BLAS, {seqlab_mkl.describe()} "
            f"({peak / 1e9:.1f} GFLOP/s, best of the `gemm` shapes and rounds), torch {t_rate / 1e9:.1f} GFLOP/s = "
            f"{100 * t_rate / peak:.0f}%. By CPU time: seqlab {s_cpu / 1e9:.1f} of {peak_cpu / 1e9:.1f} GFLOP/s = "
            f"{100 * s_cpu / peak_cpu:.0f}%, torch {100 * t_cpu / peak_cpu:.0f}%. Each step timed beside the best "
            f"`gemm` shape in the same round ({len(paired)} rounds): {_paired(paired)}")
    return _train(encoder_train, rounds, gflops, device, size)


def _paired(fractions: list[float]) -> str:
    """'median 78% of the GEMM rate (rounds 70–85%)'."""
    return (f"median {100 * statistics.median(fractions):.0f}% of the GEMM rate (rounds "
            f"{100 * min(fractions):.0f}–{100 * max(fractions):.0f}%)")


def run_gpt_train(rounds: int = 7, device: str = "cpu", size: str = "default", **_) -> BenchResult:
    return _train(gpt_train, rounds, device=device, size=size)


def run_bert_infer(rounds: int = 7, data_dir=None, **_) -> BenchResult:
    before = load_average()
    fs, ft, diff, x = bert_infer.build(data_dir=data_dir)
    t = compare(fs, ft, rounds=rounds, warmup=2, min_time=0.0, settle=0.3, wake=False)
    B, T = x["input_ids"].shape
    return BenchResult(bert_infer.NAME, bert_infer.DESCRIPTION, HEADERS,
                       [_row(f"{bert_infer.NAME} ({B}×{T} tokens)", t, before)],
                       notes=[f"largest |seqlab − transformers| of the last hidden state: {diff:.1e}"],
                       data={**_data(t), "max_abs_diff": diff, "shape": [B, T]})


def run_gpt_generate(rounds: int = 5, **_) -> BenchResult:
    before = load_average()
    fs, ft, same = gpt_generate.build()
    t = compare(fs, ft, rounds=rounds, warmup=1, min_time=0.0, settle=0.3, wake=False)
    return BenchResult(gpt_generate.NAME, gpt_generate.DESCRIPTION, HEADERS, [_row(gpt_generate.NAME, t, before)],
                       notes=[f"same 256 tokens from both: {'yes' if same else 'NO'}; "
                              f"seqlab {256 / t.seqlab_s:.0f} tokens/s, transformers {256 / t.torch_s:.0f} tokens/s"],
                       data={**_data(t), "same_tokens": same})


def run_attention_long(rounds: int = 2, threads: int | None = None, lengths=(4096, 16384), **_) -> BenchResult:
    headers = ["T", "implementation", "peak extra RSS MiB", "tracemalloc peak MiB", "time s"]
    rows, data = [], []
    before = load_average()
    for T in lengths:
        for impl in attention_long.IMPLS:
            r = attention_long.measure_in_subprocess(impl, T, repeats=max(1, rounds), threads=threads)
            data.append(r)
            if "error" in r:
                rows.append([T, impl, "failed", "", r["error"][:60]])
                continue
            rows.append([T, impl, memory.mib(r["peak_rss_bytes"]), memory.mib(r["tracemalloc_peak_bytes"]),
                         f"{r['seconds']:.2f}"])
    return BenchResult(attention_long.NAME, attention_long.DESCRIPTION, headers, rows,
                       notes=["memory: peak resident set above the inputs, one fresh process per cell "
                              "(see seqlab/bench/attention_long.py); time: median of the runs after the measured one",
                              f"load average before / after: {before} → {load_average()}"],
                       data={"cells": data})


def run_gemm(rounds: int = 7, **_) -> BenchResult:
    lib = "MKL" if seqlab_mkl.library() == "mkl" else "NumPy"
    headers = ["(m, k) @ (k, n)", f"seqlab ({lib}) GFLOP/s", "torch GFLOP/s", "seqlab / torch time"]
    rows, data = [], []
    for m, k, n in gemm.SHAPES:
        fn, ft = gemm.build(m, k, n)
        t = compare(fn, ft, rounds=rounds, warmup=2, min_time=0.05, settle=0.2)
        f = gemm.flops(m, k, n)
        rows.append([f"({m}, {k}) @ ({k}, {n})", f"{f / t.seqlab_s / 1e9:.1f}", f"{f / t.torch_s / 1e9:.1f}",
                     ratio(t.seqlab_s, t.torch_s)])
        data.append({"shape": [m, k, n], "numpy_s": t.seqlab_s, "torch_s": t.torch_s})
    return BenchResult(gemm.NAME, gemm.DESCRIPTION, headers, rows, data={"cells": data})


RUNNERS = {
    "encoder-train": run_encoder_train,
    "gpt-train": run_gpt_train,
    "bert-infer": run_bert_infer,
    "gpt-generate": run_gpt_generate,
    "attention-long": run_attention_long,
    "gemm": run_gemm,
}
def profile_target(name: str, data_dir=None):
    """(seqlab step(prof) split into phases, torch fn or None) for `seqlab bench NAME --profile`;
    `data_dir`: bert-infer's SST-2 folder (default: $SEQLAB_DATA, else a download)."""
    if name == "encoder-train":
        return encoder_train.profiled_step(), encoder_train.build()[1]
    if name == "gpt-train":
        return gpt_train.profiled_step(), gpt_train.build()[1]
    if name == "bert-infer":
        fs, ft, _, _ = bert_infer.build(data_dir=data_dir)
    elif name == "gpt-generate":
        fs, ft, _ = gpt_generate.build()
    elif name == "attention-long":
        fs, ft = attention_long._make_fn("seqlab efficient", 4096, 1, 64), \
            attention_long._make_fn("torch SDPA", 4096, 1, 64)
    else:
        raise ValueError(f"--profile needs a model benchmark ({', '.join(n for n in RUNNERS if n != 'gemm')}), "
                         f"got {name!r}")

    def step(prof) -> None:
        with prof.phase("forward" if name != "attention-long" else "forward + backward"):
            fs()

    return step, ft


def check(name: str, device: str = "cpu", size: str = "default") -> None:
    """ValueError, naming what is supported, unless benchmark `name` runs on `device` at `size`."""
    if name not in RUNNERS:
        raise ValueError(f"unknown benchmark {name!r}; choose from {', '.join(RUNNERS)}")
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; choose from {', '.join(DEVICES)}")
    if size not in SIZE_NAMES:
        raise ValueError(f"unknown size {size!r}; choose from {', '.join(SIZE_NAMES)}")
    if device != "cpu" and name not in CUDA_NAMES:
        raise ValueError(f"--device {device} supports {' and '.join(CUDA_NAMES)} only, not {name}")
    if size != "default" and name not in SIZED:
        raise ValueError(f"--size {size} applies to {' and '.join(SIZED)} only, not {name}")


def run(name: str, device: str = "cpu", size: str = "default", measure_memory: bool = True, **kwargs) -> BenchResult:
    """Run benchmark `name`; `device` "cuda" (encoder-train, gpt-train: CuPy against torch CUDA) and
    `size` "large" (the same two at GPU sizes) are checked first. A model benchmark on the CPU at its
    default size also gets both libraries' step peak memory (`measure_memory`; `seqlab.bench.memory`).
    On the CPU both libraries get the same thread count first: `threads`, or NumPy's BLAS's own."""
    check(name, device, size)
    if device == "cpu":
        from seqlab.bench.harness import set_threads

        kwargs["threads"] = set_threads(kwargs.get("threads"))
    if device != "cpu" or size != "default":
        kwargs.update(device=device, size=size)
    res = RUNNERS[name](**kwargs)
    if measure_memory and device == "cpu" and size == "default" and name in memory.MODULES:
        _with_memory(res, name, kwargs.get("threads"), kwargs.get("data_dir"))
    return res
