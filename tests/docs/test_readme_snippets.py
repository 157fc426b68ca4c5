"""README.md's "Hugging Face models from Python" block runs as written: it defines every name it uses (a
walkthrough found `folder`, `ids` and `mask` undefined), here on a tiny GPT-2 folder at runs/clm/pretrained
shaped as `seqlab train clm-pretrain` writes it (a WordPiece tokenizer beside the weights)."""
import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
SENTENCES = ["the movie is a film that moved me", "a film that is good", "the movie moved me"] * 5


def _block(marker: str) -> str:
    (code,) = [b for b in FENCE.findall(README.read_text(encoding="utf-8")) if marker in b]
    return code


def test_hugging_face_block_runs_on_a_clm_pretrain_folder(tmp_path, monkeypatch):
    import seqlab
    from seqlab.data import Tokenizer
    from seqlab.models import GPT, GPTConfig

    folder = tmp_path / "runs" / "clm" / "pretrained"
    tok = Tokenizer.train_wordpiece(SENTENCES, 60)
    seqlab.manual_seed(0)
    GPT(GPTConfig(vocab_size=tok.vocab_size, n_positions=16, n_embd=16, n_layer=2, n_head=2)).save_pretrained(folder)
    tok.save(folder)
    monkeypatch.chdir(tmp_path)
    names: dict = {}
    exec(compile(_block("AutoModel.from_pretrained(folder"), "README.md Hugging Face block", "exec"), names)
    ids, mask, out, model = names["ids"], names["mask"], names["out"], names["model"]
    assert ids.shape == mask.shape and ids.shape[0] == 2 and mask.min() == 0  # two prompts, one padded
    assert model.config.n_layer == 1 and np.isfinite(float(out.loss))
    assert out["logits"].shape == (*ids.shape, tok.vocab_size) and out[0] is out.loss
    assert (tmp_path / "out" / "config.json").is_file() and (tmp_path / "out" / "model.safetensors").is_file()
