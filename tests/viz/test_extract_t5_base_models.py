"""The attention viewer on T5's base classes: T5EncoderModel as an encoder (self-attention only), T5Model with
a given target (it has no language-model head to write one, and says so)."""
import pytest

from seqlab.models.t5 import T5Config
from seqlab.models.t5_heads import T5EncoderModel, T5Model
from seqlab.viz.extract import VizError, attention_kind, extract_attention

CFG = dict(vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=2, num_heads=4, decoder_start_token_id=0)


class _Tok:
    """Characters as ids, then the end token 1."""

    def __call__(self, text, text_pair=None, **kwargs):
        ids = [(ord(c) % 60) + 2 for c in text] + [1]
        return {"input_ids": [ids], "attention_mask": [[1] * len(ids)]}

    def convert_ids_to_tokens(self, ids):
        return [str(i) for i in ids]


def test_t5_encoder_model_is_viewed_as_an_encoder():
    model = T5EncoderModel(T5Config(**CFG))
    assert attention_kind(model) == "encoder"
    att = extract_attention(model, _Tok(), "hello")
    assert list(att.stacks()) == ["self"] and len(att.stacks()["self"]) == 2
    assert att.stacks()["self"][0].shape[-2:] == (6, 6)


def test_t5_model_needs_a_target_and_gives_three_stacks_with_one():
    model = T5Model(T5Config(**CFG))
    with pytest.raises(VizError, match="no language-model head.*--target"):
        extract_attention(model, _Tok(), "hello")
    att = extract_attention(model, _Tok(), "hello", target="hi")
    assert list(att.stacks()) == ["encoder", "decoder", "cross"]
