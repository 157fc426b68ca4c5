"""PNG heatmaps: the grid's pixel size follows layers x heads; labels thin out; alignment plot."""
import numpy as np
import pytest
from matplotlib.image import imread

from seqlab.viz import alignment_plot, attention_grid
from seqlab.viz.grid import LABEL_STEP_IN, display_token, draw_heatmap, plan_layout

TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]
T = len(TOKENS)


def _size(path):
    return imread(path).shape[:2]  # (height, width)


def test_grid_size_grows_with_layers_and_heads(tmp_path, softmax_stack):
    sizes = {}
    for L, H in [(1, 2), (2, 2), (4, 2), (1, 4)]:
        (path,) = attention_grid(softmax_stack(L, H, T, T), TOKENS, tmp_path / f"g{L}x{H}.png")
        sizes[L, H] = _size(path)
    row = sizes[2, 2][0] - sizes[1, 2][0]  # one more row of panels
    col = (sizes[1, 4][1] - sizes[1, 2][1]) / 2  # one more column
    assert row > 100 and col > 100
    assert sizes[4, 2][0] - sizes[2, 2][0] == pytest.approx(2 * row, abs=2)
    assert sizes[4, 2][1] == sizes[1, 2][1]  # more layers: taller, not wider
    assert sizes[1, 4][0] == sizes[1, 2][0]  # more heads: wider, not taller
    layout = plan_layout(4, 2, TOKENS, TOKENS, inch_per_token=1.1 * LABEL_STEP_IN, min_side=1.4, max_side=4.0,
                         max_width=36, max_height=36, labels_every_panel=False, title=False)
    assert sizes[4, 2] == layout.pixels


def test_per_layer_files(tmp_path, softmax_stack):
    paths = attention_grid(softmax_stack(3, 2, T, T), TOKENS, tmp_path / "grid.png",
                           per_layer_dir=tmp_path / "layers", title="demo")
    assert paths == [tmp_path / "grid.png"] + [tmp_path / "layers" / f"layer_{i}.png" for i in range(3)]
    assert all(p.stat().st_size > 1000 for p in paths)
    assert _size(paths[1])[1] > _size(paths[0])[1] / 2  # a layer's panels are larger than the grid's


def test_cross_attention_grid_and_big_inputs_are_capped(tmp_path, softmax_stack):
    src = [f"s{i}" for i in range(7)]
    (path,) = attention_grid(softmax_stack(1, 2, 4, 7), src, tmp_path / "cross.png",
                             target_tokens=["a", "b", "c", "d"])
    h, w = _size(path)
    assert w > h  # 7 keys across, 4 queries down
    long = [f"tok{i}" for i in range(150)]
    (path,) = attention_grid(softmax_stack(3, 3, 150, 150), long, tmp_path / "big.png", max_size_in=12)
    assert max(_size(path)) <= 1200


def test_labels_thin_out_when_tokens_do_not_fit():
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.add_subplot()
    w = np.full((100, 100), 0.01)
    draw_heatmap(ax, w, [str(i) for i in range(100)], [str(i) for i in range(100)], panel_w=3.0, panel_h=3.0)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert 5 < len(labels) <= 3.0 / LABEL_STEP_IN
    assert labels[:2] == ["0", str(100 // len(labels) + (100 % len(labels) > 0))]


def test_display_token():
    assert display_token("$x$") == r"\$x\$"  # no mathtext
    assert display_token("") == "\u2205"
    assert display_token(" ") == "\u2423" and display_token("a\nb\t") == "a\u23ceb\u2192"  # whitespace shown
    assert display_token("a" * 40).endswith("\u2026") and len(display_token("a" * 40)) == 14


def test_alignment_plot(tmp_path, softmax_stack):
    w = softmax_stack(1, 1, 5, 8)[0, 0]  # (T_tgt, T_src)
    path = alignment_plot(w, [f"s{i}" for i in range(8)], [f"t{i}" for i in range(5)], tmp_path / "al.png",
                          title="alignment")
    h, wpx = _size(path)
    assert wpx > h
    with pytest.raises(ValueError, match=r"expected \(T_tgt, T_src\) = \(5, 8\)"):
        alignment_plot(w[None], [f"s{i}" for i in range(8)], [f"t{i}" for i in range(5)], tmp_path / "x.png")
    with pytest.raises(ValueError, match=r"5 query and 7 key tokens"):
        alignment_plot(w, [f"s{i}" for i in range(7)], [f"t{i}" for i in range(5)], tmp_path / "x.png")
