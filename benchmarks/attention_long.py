"""attention-long: seqlab vs PyTorch (the logic lives in seqlab.bench.attention_long; see `seqlab bench --help`).

    python benchmarks/attention_long.py [--threads N] [--repeats N] [--profile] [--results docs/results.md]
"""
import sys

from seqlab.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "attention-long", *sys.argv[1:]]))
