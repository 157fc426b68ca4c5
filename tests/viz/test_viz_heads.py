"""head_stats on crafted heads, and the input checks every viz function shares."""
import csv

import numpy as np
import pytest

from seqlab.viz import VizError, attention_grid, format_heads_table, head_stats, write_heads_csv
from seqlab.viz.heads import COLUMNS, is_punct

def crafted_heads(T: int) -> np.ndarray:
    """(1, 2, T, T): head 0 attends to itself, head 1 to the previous token (row 0 to itself)."""
    prev = np.eye(T, k=-1)
    prev[0, 0] = 1.0
    return np.stack([np.eye(T), prev])[None]


TOKENS = ["[CLS]", "the", "cat", "sat", ".", "[SEP]", "it", "purred", "!", "[SEP]"]


def test_crafted_heads_round_trip():
    rows = head_stats(crafted_heads(len(TOKENS)), TOKENS)
    assert [(r["layer"], r["head"], r["pattern"]) for r in rows] == [(0, 0, "self"), (0, 1, "previous")]
    self_row, prev_row = rows
    assert self_row["share_self"] == pytest.approx(1.0)
    assert self_row["entropy"] == pytest.approx(0.0)
    assert self_row["mean_distance"] == pytest.approx(0.0)
    assert prev_row["share_previous"] == pytest.approx(1.0)
    assert prev_row["mean_distance"] == pytest.approx((len(TOKENS) - 1) / len(TOKENS))
    assert set(COLUMNS) == set(self_row)


def test_one_token_has_zero_entropy_printed_without_a_sign(tmp_path):
    """A one-token prompt (`seqlab attention "x"`): every weight is 1, entropy 0 — shown as 0.000, not -0.000."""
    rows = head_stats(np.ones((2, 3, 1, 1)), ["x"])
    assert all(r["entropy"] == 0.0 and np.copysign(1.0, r["entropy"]) == 1.0 for r in rows)
    assert "-0.0" not in format_heads_table(rows)
    assert "-0" not in write_heads_csv(rows, tmp_path / "heads.csv").read_text()


@pytest.mark.parametrize("target, pattern", [(0, "first"), (5, "sep"), (4, "punct")])
def test_column_patterns(target, pattern):
    T = len(TOKENS)
    w = np.zeros((1, 1, T, T))
    w[..., target] = 1.0  # every query looks at one token
    (row,) = head_stats(w, TOKENS)
    assert row["pattern"] == pattern


def test_uniform_is_broad_with_max_entropy():
    T = len(TOKENS)
    (row,) = head_stats(np.full((1, 1, T, T), 1.0 / T), TOKENS)
    assert row["pattern"] == "broad"
    assert row["entropy"] == pytest.approx(np.log(T))


def test_sep_share_counts_every_separator():
    T = len(TOKENS)
    w = np.zeros((1, 1, T, T))
    w[..., 5] = w[..., 9] = 0.5
    (row,) = head_stats(w, TOKENS)
    assert row["share_sep"] == pytest.approx(1.0)


def test_is_punct():
    assert is_punct(".") and is_punct("##,") and is_punct("Ġ!") and is_punct("...")
    assert not is_punct("cat") and not is_punct("[SEP]") and not is_punct("") and not is_punct("'s")


def test_csv_and_table(tmp_path, softmax_stack):
    rows = head_stats(softmax_stack(2, 3, len(TOKENS), len(TOKENS)), TOKENS)
    path = write_heads_csv(rows, tmp_path / "heads.csv")
    with path.open() as f:
        back = list(csv.DictReader(f))
    assert len(back) == 6 and list(back[0]) == list(COLUMNS)
    assert float(back[4]["entropy"]) == pytest.approx(rows[4]["entropy"], rel=1e-5)
    table = format_heads_table(rows).splitlines()
    assert len(table) == 2 + 6
    assert table[0].split() == ["layer", "head", "pattern", "entropy", "dist",
                                "self", "prev", "first", "sep", "punct"]
    assert len({len(line) for line in table}) == 1  # aligned


def test_rows_not_summing_to_one_name_layer_and_head(softmax_stack):
    w = softmax_stack(3, 4, 5, 5)
    w[2, 1, 3] *= 0.5
    with pytest.raises(ValueError, match=r"layer 2 head 1: query row 3 sums to 0\.5"):
        head_stats(w, TOKENS[:5])


def test_wrong_shapes_quote_the_shape(tmp_path, softmax_stack):
    with pytest.raises(ValueError, match=r"\(2, 4, 5, 5\).*6 query and 6 key tokens"):
        head_stats(softmax_stack(2, 4, 5, 5), TOKENS[:6])
    with pytest.raises(ValueError, match=r"shape \(4, 5, 5\); expected \(L, H, T_q, T_k\)"):
        head_stats(softmax_stack(1, 4, 5, 5)[0], TOKENS[:5])
    mixed = [softmax_stack(1, 4, 5, 5)[0], softmax_stack(1, 3, 5, 5)[0]]
    with pytest.raises(ValueError, match=r"attentions\[1\] has shape \(3, 5, 5\) but attentions\[0\] has \(4, 5, 5\)"):
        attention_grid(mixed, TOKENS[:5], tmp_path / "g.png")
    with pytest.raises(ValueError, match=r"batch of 2 examples"):
        head_stats([np.concatenate([softmax_stack(1, 4, 5, 5)] * 2)], TOKENS[:5])


def test_other_bad_inputs(softmax_stack):
    w = softmax_stack(1, 2, 5, 5)
    bad = w.copy()
    bad[0, 1, 2, 2] = np.nan
    with pytest.raises(ValueError, match="layer 0 head 1 has a non-finite weight"):
        head_stats(bad, TOKENS[:5])
    with pytest.raises(TypeError, match="list of token strings"):
        head_stats(w, "the cat sat on mat")
    with pytest.raises(VizError, match="empty"):
        head_stats([], TOKENS[:5])


def test_accepts_hf_style_tuple_and_array_likes(softmax_stack):
    class Wrapped:  # anything with __array__, e.g. a torch tensor
        def __init__(self, a):
            self.a = a

        def __array__(self, dtype=None, copy=None):
            return self.a

    w = softmax_stack(2, 3, 5, 5)
    hf = tuple(Wrapped(layer[None]) for layer in w)  # per layer (1, H, T, T), batch of one
    assert head_stats(hf, TOKENS[:5]) == head_stats(w, TOKENS[:5])
