"""Texts longer than the model's positions: cut with one `warning:` line by default (attention, embed),
a sliding window with one `note:` line (generate), refused with --no-truncate; the cut is at a token
boundary and fits exactly."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from relhelp import one_error_line, warnings_of

LONG = "the cat sat on the mat and the dog ran in the park " * 3


def _gpt(models):
    from seqlab.models import GPT

    return GPT.from_pretrained(models.gpt)


# ---------------------------------------------------------------- attention

def test_attention_cuts_a_long_text_with_one_warning(cli, models, tmp_path):
    code, out, err = cli("attention", LONG, "--model", models.gpt, "--out", tmp_path / "o")
    assert code == 0, err
    (warning,) = warnings_of(err)
    n = len(models.bpe.encode(LONG))
    assert f"TEXT has {n} tokens but GPT takes at most 16 (n_positions in its config); cut to 16" in warning
    assert "--no-truncate" in warning and "error" not in err
    assert (tmp_path / "o" / "attention.html").is_file() and (tmp_path / "o" / "heads.csv").is_file()


def test_attention_no_truncate_refuses_and_writes_nothing(cli, models, tmp_path):
    code, out, err = cli("attention", LONG, "--model", models.gpt, "--out", tmp_path / "o", "--no-truncate")
    line = one_error_line(err)
    assert code == 1 and "TEXT has" in line and "at most 16 (n_positions" in line and "--no-truncate" in line
    assert out == "" and not (tmp_path / "o").exists()  # the folder made up front is removed again


def test_attention_fit_is_a_prefix_with_exactly_the_model_positions(models):
    from seqlab.cli.attention import fit_inputs
    from seqlab.viz import extract_attention

    model = _gpt(models)
    text, _, _ = fit_inputs(model, models.bpe, LONG, None, None)
    assert LONG.startswith(text) and len(models.bpe.encode(text)) == 16
    assert models.bpe.encode(text) == models.bpe.encode(LONG)[:16]  # whole tokens, the first 16
    att = extract_attention(model, models.bpe, text)
    assert len(att.tokens) == 16 and att.attentions[0].shape[-1] == 16


def test_attention_pair_is_cut_longest_first(cli, models, capsys):
    from seqlab.cli.attention import fit_inputs
    from seqlab.models import BertModel

    bert = BertModel.from_pretrained(models.bert)  # 12 positions: [CLS] A [SEP] B [SEP]
    a, b = "a good movie with a great plot and a bad film", "the cat"
    text, pair, _ = fit_inputs(bert, models.wordpiece, a, b, None)
    (warning,) = warnings_of(capsys.readouterr().err)
    assert "TEXT and --pair together have" in warning and "cut to 12" in warning
    assert pair == b and a.startswith(text)  # only the longer text lost tokens
    assert len(models.wordpiece(text, pair)["input_ids"][0]) == 12


def test_translator_source_and_target_fit_its_max_len(models, capsys):
    import seqlab
    from seqlab.cli.attention import fit_inputs
    from seqlab.models.translator import Translator, TranslatorConfig

    V = models.bpe.vocab_size
    seqlab.manual_seed(0)
    model = Translator(TranslatorConfig(V, V, d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                        dim_feedforward=8, max_len=8)).eval()
    text, _, target = fit_inputs(model, models.bpe, LONG, None, LONG)
    assert len(warnings_of(capsys.readouterr().err)) == 2  # TEXT and --target
    assert len(models.bpe.encode(text)) + 1 == 8  # + </s>
    assert 1 + len(models.bpe.encode(target)) == 8  # <s> +


# ---------------------------------------------------------------- embed

def test_embed_warns_then_embeds_the_first_tokens(cli, models):
    from seqlab.embed import SentenceEncoder

    code, out, err = cli("embed", "--model", models.bert, "a cat", LONG)
    assert code == 0, err
    (warning,) = warnings_of(err)
    assert "TEXT [1] has" in warning and "reads at most 12" in warning
    enc = SentenceEncoder(str(models.bert))
    assert enc.max_length == 12
    cut = models.wordpiece.decode(models.wordpiece.encode(LONG)[1:11])  # the 10 words that fit beside [CLS] [SEP]
    np.testing.assert_allclose(enc.encode([LONG]), enc.encode([cut]), rtol=1e-5, atol=1e-6)


def test_embed_no_truncate_and_section_3_2(cli, models):
    code, _, err = cli("embed", "--model", models.bert, "a cat", LONG, "--no-truncate")
    assert code == 1 and "TEXT [1] has" in one_error_line(err) and "at most 12" in err
    code, out, err = cli("embed", "--model", models.bert, "--section-3-2", LONG)
    assert code == 0 and "cut to 12" in warnings_of(err)[0]
    assert "last_hidden_state: (1, 12, 16)" in out
    code, _, err = cli("embed", "--model", models.bert, "--section-3-2", LONG, "--no-truncate")
    assert code == 1 and "max_position_embeddings" in one_error_line(err)


# ---------------------------------------------------------------- generate

def test_generate_slides_past_the_models_positions(cli, models):
    """A prompt and new tokens that outgrow n_positions are not cut: each new token reads the last 16 tokens
    (generate(slide=True), nanoGPT's sampler), with one note and no warning; the whole prompt is printed."""
    code, out, err = cli("generate", models.gpt, "--prompt", LONG, "--max-new-tokens", "4")
    assert code == 0, err
    ids = models.bpe.encode(LONG)
    (line,) = err.splitlines()
    assert line.startswith("note: ") and warnings_of(err) == []
    assert f"--prompt has {len(ids)} tokens" in line and "the last 16 tokens" in line and "--no-truncate" in line
    expected = _gpt(models).generate(np.array([ids]), max_new_tokens=4, slide=True)[0, len(ids):]
    assert out.rstrip("\n") == LONG + models.bpe.decode(expected)
    # a short prompt with many new tokens slides too
    code, out, err = cli("generate", models.gpt, "--prompt", "a cat", "--max-new-tokens", "30")
    ids = models.bpe.encode("a cat")
    expected = _gpt(models).generate(np.array([ids]), max_new_tokens=30, slide=True)[0, len(ids):]
    assert code == 0 and "note: " in err and out.rstrip("\n") == "a cat" + models.bpe.decode(expected)
    code, out, err = cli("generate", models.gpt, "--prompt", "a cat", "--max-new-tokens", "3")
    assert code == 0 and err == ""  # it fits: nothing to say


def test_generate_notes_every_prompt_that_outgrows_the_positions(cli, models):
    """Several prompts over the limit: one note names them all (each with its tokens and positions); a prompt
    that fits with its new tokens is not named."""
    a, b = "the cat sat on the mat and the dog", "a dog ran in the park and the cat sat"
    na, nb = len(models.bpe.encode(a)), len(models.bpe.encode(b))
    new = 16 - min(na, nb) + 1  # both outgrow the 16 positions
    code, out, err = cli("generate", models.gpt, "--prompt", a, "--prompt", b, "--prompt", "a cat",
                         "--max-new-tokens", str(new))
    assert code == 0, err
    (line,) = err.splitlines()
    assert line.startswith("note: ") and warnings_of(err) == []
    assert (f"--prompt 1 ({na} tokens) and --prompt 2 ({nb} tokens) with --max-new-tokens {new} need "
            f"{na + new} and {nb + new} positions, but the model has 16 positions") in line
    assert "--prompt 3" not in line and "the last 16 tokens" in line
    assert [x for x in out.splitlines() if x.startswith("--- prompt ")] == [f"--- prompt {i} ---" for i in (1, 2, 3)]
    code, out, err = cli("generate", models.gpt, "--prompt", a, "--prompt", b, "--max-new-tokens", str(new),
                         "--no-truncate")
    line = one_error_line(err)
    assert code == 1 and "--prompt 1 (" in line and "--prompt 2 (" in line and "shorten them" in line and out == ""


def test_generate_no_truncate_refuses(cli, models):
    code, out, err = cli("generate", models.gpt, "--prompt", "a cat", "--prompt", LONG, "--max-new-tokens", "4",
                         "--no-truncate")
    line = one_error_line(err)
    assert code == 1 and "--prompt 2 has" in line and "16 positions" in line and out == ""


def test_t5_has_no_position_limit(cli, models):
    code, out, err = cli("generate", models.t5, "--prompt", LONG * 3, "--max-new-tokens", "2", "--no-truncate")
    assert code == 0 and err == ""


# ---------------------------------------------------------------- the cut itself, on any text

# words, punctuation, multi-byte characters (several byte-level tokens share one character's span),
# a combining accent and runs of spaces
PIECES = ["the", "cat", "sat", " ", "  ", ".", "!", "é", "ß", "日本", "🙂", "\u0301", "x"]
TEXT = st.lists(st.sampled_from(PIECES), min_size=1, max_size=30).map("".join)


@settings(max_examples=40, deadline=None)
@given(text=TEXT, limit=st.integers(3, 20), which=st.sampled_from(["bpe", "wordpiece"]))
def test_fit_texts_always_fits_and_keeps_a_prefix(models, text, limit, which):
    from seqlab.cli._text import fit_texts

    tok = getattr(models, which)
    if not text.strip() or not tok.encode(text, add_special_tokens=False):
        return
    count = lambda t: len(tok(t[0])["input_ids"][0])  # noqa: E731
    out = fit_texts([text], count, limit, tok)
    if out is None:  # only when not even the first character fits beside the special tokens
        assert count([text[:len(text) - len(text.lstrip()) + 1]]) > limit
        return
    assert text.startswith(out[0]) and count(out) <= limit
    if count([text]) <= limit:
        assert out[0] == text
