"""encoder-train: seqlab vs PyTorch (the logic lives in seqlab.bench.encoder_train; see `seqlab bench --help`).

    python benchmarks/encoder_train.py [--threads N] [--repeats N] [--profile] [--results docs/results.md]
"""
import sys

from seqlab.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "encoder-train", *sys.argv[1:]]))
