"""What the pretrained-style models take as masks and ids: transformers' masks may be bools or 0/1 floats
as well as integers; a bad one is named as the mask, and an input without tokens is refused."""
import numpy as np
import pytest

from seqlab.models import BertConfig, BertModel, GPTConfig
from seqlab.models.gpt import GPT


def _bert():
    return BertModel(BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=16, max_position_embeddings=16)).eval()


def _gpt():
    return GPT(GPTConfig(vocab_size=30, n_positions=16, n_embd=8, n_layer=1, n_head=2)).eval()


IDS = np.array([[5, 6, 7, 0], [8, 9, 0, 0]])
MASK = np.array([[1, 1, 1, 0], [1, 1, 0, 0]])


@pytest.mark.parametrize("make", [_bert, _gpt])
def test_bool_and_float_masks_give_the_integer_masks_result(make):
    model = make()
    field = "logits" if isinstance(model, GPT) else "last_hidden_state"
    want = model(IDS, attention_mask=MASK)[field].numpy()
    assert not np.allclose(model(IDS)[field].numpy(), want)  # the mask matters here
    for mask in (MASK.astype(bool), MASK.astype(np.float32)):
        np.testing.assert_array_equal(model(IDS, attention_mask=mask)[field].numpy(), want)


@pytest.mark.parametrize("make", [_bert, _gpt])
def test_a_bad_mask_is_named_as_the_mask(make):
    with pytest.raises(TypeError, match="attention_mask holds values other than 0 and 1"):
        make()(IDS, attention_mask=MASK * 0.5)
    with pytest.raises(TypeError, match="attention_mask must be integers, got dtype <U1"):
        make()(IDS, attention_mask=np.array([["1", "1", "1", "0"]] * 2))


@pytest.mark.parametrize("make", [_bert, _gpt])
def test_ids_without_tokens_or_of_another_dtype_are_named(make):
    with pytest.raises(ValueError, match=r"input_ids has no tokens \(shape \(1, 0\)\)"):
        make()(np.zeros((1, 0), np.int64))
    with pytest.raises(TypeError, match="input_ids must be integers, got dtype float64"):
        make()(IDS.astype(np.float64))
