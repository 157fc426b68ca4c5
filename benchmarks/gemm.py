"""gemm: seqlab vs PyTorch (the logic lives in seqlab.bench.gemm; see `seqlab bench --help`).

    python benchmarks/gemm.py [--threads N] [--repeats N] [--profile] [--results docs/results.md]
"""
import sys

from seqlab.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "gemm", *sys.argv[1:]]))
