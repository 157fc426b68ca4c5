"""Benchmarks: seqlab against PyTorch CPU eager, side by side, same weights, inputs and threads.

    from seqlab.bench import run
    print(run("encoder-train").markdown())

Benchmarks (`NAMES`): encoder-train, gpt-train, bert-infer, gpt-generate,
attention-long, gemm. They need torch (and transformers for bert-infer and
gpt-generate): the `test` extra. `seqlab bench` is the command line;
benchmarks/*.py are thin scripts around the same functions.

    run("gpt-train", device="cuda", size="large")   # CuPy against PyTorch CUDA eager (needs a GPU)

`device` "cuda" and `size` "large" exist for encoder-train and gpt-train
(`seqlab.bench.device`); benchmarks/gpu.sh runs both sizes on a GPU.
"""
from seqlab.bench.result import BenchResult

__all__ = ["BenchResult", "NAMES", "profile_target", "run"]


def __getattr__(name: str):
    """`run`, `profile_target`, `NAMES` from `seqlab.bench.runner`, imported on first use: the runner imports
    every benchmark module, and `python -m seqlab.bench.memory` (or attention_long) must not find its own
    module imported already by the package."""
    if name in ("run", "profile_target", "NAMES"):
        from seqlab.bench import runner

        return tuple(runner.RUNNERS) if name == "NAMES" else getattr(runner, name)
    raise AttributeError(f"module 'seqlab.bench' has no attribute {name!r}")
