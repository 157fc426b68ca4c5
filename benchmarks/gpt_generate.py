"""gpt-generate: seqlab vs PyTorch (the logic lives in seqlab.bench.gpt_generate; see `seqlab bench --help`).

    python benchmarks/gpt_generate.py [--threads N] [--repeats N] [--profile] [--results docs/results.md]
"""
import sys

from seqlab.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "gpt-generate", *sys.argv[1:]]))
