"""docs/from-torch.md and its Chinese twin: every ```python block runs, both pages carry the same code (only the
comments, which the Chinese page translates, and blank lines may differ), and the first block (a nanoGPT-style
script top) is torch code: with the imports switched, torch itself runs it."""
import re
from pathlib import Path

import pytest
from doc_code import code_only

DOCS = Path(__file__).resolve().parents[2] / "docs"
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def blocks(name: str) -> list[str]:
    return FENCE.findall((DOCS / name).read_text(encoding="utf-8"))


def test_both_pages_carry_the_same_code():
    en, zh = blocks("from-torch.md"), blocks("from-torch.zh.md")
    assert len(en) >= 2 and len(en) == len(zh)
    assert [code_only(b) for b in en] == [code_only(b) for b in zh], "the pages' code differs beyond comments"


@pytest.mark.parametrize("index", range(len(blocks("from-torch.md"))))
def test_every_block_runs(index, capsys):
    exec(compile(blocks("from-torch.md")[index], f"from-torch.md block {index}", "exec"), {})
    assert capsys.readouterr().out  # each block prints what it shows


def test_the_script_top_is_torch_code(capsys):
    import warnings

    code = blocks("from-torch.md")[0]
    code = (code.replace("import seqlab as torch", "import torch")
            .replace("from seqlab import nn", "from torch import nn")
            .replace("import seqlab.nn.functional as F", "import torch.nn.functional as F")
            .replace("model = torch.compile(model)", "pass  # (torch.compile needs a C compiler)"))
    assert not [line for line in code.splitlines() if "seqlab" in line.split("#")[0]]  # code, not comments
    import torch

    precision, tf32 = torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # torch.cuda.amp.GradScaler's deprecation
            exec(compile(code, "from-torch.md block 0, on torch", "exec"), {})
    finally:  # the script sets torch's TF32 flag (and with it the matmul precision): later tests see the default
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.set_float32_matmul_precision(precision)
    out = capsys.readouterr().out
    assert out.startswith("19 {'vocab': 65, 'block': 16}")
