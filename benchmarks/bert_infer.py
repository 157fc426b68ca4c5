"""bert-infer: seqlab vs PyTorch (the logic lives in seqlab.bench.bert_infer; see `seqlab bench --help`).

    python benchmarks/bert_infer.py [--threads N] [--repeats N] [--profile] [--results docs/results.md]
"""
import sys

from seqlab.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "bert-infer", *sys.argv[1:]]))
