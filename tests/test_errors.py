"""Bad inputs raise errors that name the offending values (issue 2, Proof)."""
import numpy as np
import pytest

import seqlab
import seqlab.functional as F
from seqlab import nn


def test_matmul_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(2, 3\) @ \(4, 5\).*3 and 4"):
        seqlab.randn(2, 3) @ seqlab.randn(4, 5)
    with pytest.raises(ValueError, match=r"\(2, 7, 3\) @ \(2,\)"):
        seqlab.randn(2, 7, 3) @ seqlab.randn(2)
    with pytest.raises(ValueError, match=r"at least 1 dimension.*\(\)"):
        seqlab.tensor(2.0) @ seqlab.randn(2)


def test_matmul_batch_mismatch_names_shapes():
    with pytest.raises(ValueError, match=r"\(2, 3, 4\).*\(5, 4, 2\)"):
        seqlab.randn(2, 3, 4) @ seqlab.randn(5, 4, 2)


def test_linear_wrong_last_dim():
    layer = nn.Linear(128, 4)
    with pytest.raises(ValueError, match=r"x has shape \(2, 7, 64\) but the layer expects last dim 128"):
        layer(seqlab.randn(2, 7, 64))
    with pytest.raises(ValueError, match=r"\(3, 5\).*last dim 4"):
        F.linear(seqlab.randn(3, 5), seqlab.randn(2, 4))


def test_linear_bad_sizes():
    with pytest.raises(ValueError, match="in_features=0"):
        nn.Linear(0, 3)


def test_float_ids_into_embedding():
    emb = nn.Embedding(10, 4)
    with pytest.raises(TypeError, match="integers, got dtype float32"):
        emb(seqlab.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="float64"):
        F.embedding(np.array([0.5]), emb.weight)


def test_ids_out_of_range():
    emb = nn.Embedding(10, 4)
    with pytest.raises(IndexError, match=r"token id 10 is out of range for an embedding of 10 rows \(valid ids 0..9\)"):
        emb(np.array([[1, 10]]))
    with pytest.raises(IndexError, match="token id -1"):
        emb(np.array([-1, 2]))
    with pytest.raises(ValueError, match="padding_idx 12"):
        nn.Embedding(10, 4, padding_idx=12)


def test_cross_entropy_bad_targets():
    logits = seqlab.randn(3, 5)
    with pytest.raises(IndexError, match="target class 5 is out of range for 5 classes"):
        F.cross_entropy(logits, np.array([0, 5, 1]))
    with pytest.raises(TypeError, match="float64"):
        F.cross_entropy(logits, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match=r"target shape \(3,\), got \(4,\)"):
        F.cross_entropy(logits, np.array([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="'avg'"):
        F.cross_entropy(logits, np.array([0, 1, 2]), reduction="avg")
    with pytest.raises(ValueError, match="1.5"):
        F.cross_entropy(logits, np.array([0, 1, 2]), label_smoothing=1.5)


def test_shape_op_errors():
    x = seqlab.randn(2, 3)
    with pytest.raises(ValueError, match=r"shape \(2, 3\) \(6 elements\) into \(4, 2\)"):
        x.reshape(4, 2)
    with pytest.raises(ValueError, match=r"\(0, 0\) are not a permutation of 2"):
        x.permute(0, 0)
    with pytest.raises(ValueError, match=r"\[\(2, 3\), \(3, 3\)\]"):
        seqlab.cat([x, seqlab.randn(3, 3)], dim=1)
    with pytest.raises(ValueError, match=r"\[\(2, 3\), \(2, 4\)\]"):
        seqlab.stack([x, seqlab.randn(2, 4)])
    with pytest.raises(ValueError, match=r"\[2, 2\] do not add up to 3"):
        x.split([2, 2], dim=1)
    with pytest.raises(IndexError, match="dim 2 is out of range"):
        x.sum(dim=2)


def test_layer_norm_shape_error():
    with pytest.raises(ValueError, match=r"\(2, 5\).*\(4,\)"):
        F.layer_norm(seqlab.randn(2, 5), 4)


def test_masked_fill_needs_a_bool_mask():
    with pytest.raises(TypeError, match="int64"):
        seqlab.randn(2).masked_fill(np.array([0, 1]), 0.0)


def test_unknown_device_and_dtype():
    with pytest.raises(ValueError, match="'tpu'"):
        seqlab.backend.get_xp("tpu")
    with pytest.raises(ValueError, match="int32"):
        seqlab.backend.set_default_dtype(np.int32)


def test_cuda_without_cupy_is_a_clear_error():
    if seqlab.backend.cuda_available():
        pytest.skip("a GPU is available here")
    with pytest.raises(RuntimeError, match="CuPy"):
        seqlab.randn(2).to("cuda")


def test_a_negative_seed_is_named_before_numpy_sees_it():
    import seqlab

    with pytest.raises(ValueError, match="seed must be >= 0, got -1"):
        seqlab.manual_seed(-1)
    with pytest.raises(TypeError, match="seed must be an int, got float"):
        seqlab.manual_seed(1.5)
