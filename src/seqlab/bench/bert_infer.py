"""bert-infer: the pretrained MiniLM (all-MiniLM-L6-v2) encoding 32 SST-2 dev sentences.

seqlab's `BertModel.from_pretrained("minilm")` against transformers'
`BertModel.from_pretrained` on the same folder (its default attention, SDPA),
both in eval mode without gradients (`seqlab.no_grad`, `torch.inference_mode`),
on the same ids: the first 32 dev sentences, tokenised with the model's
WordPiece vocabulary and padded to the longest.
"""
from __future__ import annotations

NAME = "bert-infer"
DESCRIPTION = "pretrained MiniLM (6 layers, 384 hidden) forward on 32 SST-2 dev sentences padded to the longest"


def make_inputs(n: int = 32, data_dir=None) -> dict:
    """input_ids and attention_mask (n, T) int64 of the first `n` SST-2 dev sentences."""
    from seqlab.data import load_sst2
    from seqlab.data.tokenizers import Tokenizer
    from seqlab.hub.pretrained import resolve

    sentences = [s for s, _ in load_sst2("dev", data_dir)[:n]]
    tok = Tokenizer.from_pretrained(resolve("minilm"))
    enc = tok(sentences, padding=True)
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}


def build(n: int = 32, data_dir=None):
    """(seqlab fn, torch fn, max |difference| of the last hidden states, inputs)."""
    import numpy as np
    import torch
    import transformers

    import seqlab
    from seqlab.hub.pretrained import resolve
    from seqlab.models.bert import BertModel

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    folder = resolve("minilm")
    model = BertModel.from_pretrained(folder).eval()
    twin = transformers.BertModel.from_pretrained(str(folder)).eval()
    x = make_inputs(n, data_dir)
    t_ids, t_mask = torch.from_numpy(x["input_ids"]), torch.from_numpy(x["attention_mask"])

    def seqlab_fn():
        with seqlab.no_grad():
            return model(x["input_ids"], attention_mask=x["attention_mask"]).last_hidden_state

    def torch_fn():
        with torch.inference_mode():
            return twin(input_ids=t_ids, attention_mask=t_mask).last_hidden_state

    diff = float(np.abs(seqlab_fn().numpy() - torch_fn().numpy()).max())
    return seqlab_fn, torch_fn, diff, x
