"""line_plot, bar_plot and training_curves write readable PNGs and reject bad series."""
import pytest
from matplotlib.image import imread

from seqlab.viz import bar_plot, line_plot, training_curves


def test_line_plot(tmp_path):
    path = line_plot({"lstm": ([1, 2, 3], [0.9, 0.5, 0.2]), "gru": ([1, 2, 3], [0.8, 0.4, 0.3])},
                     tmp_path / "sub" / "lines.png", "loss", "epoch", "loss", logy=True)
    assert imread(path).shape[:2] == (450, 700)


def test_line_plot_errors(tmp_path):
    with pytest.raises(ValueError, match="'a' has 3 x values but 2 y values"):
        line_plot({"a": ([1, 2, 3], [1, 2])}, tmp_path / "x.png", "", "", "")
    with pytest.raises(ValueError, match="'a' has a non-positive value 0 but logy=True"):
        line_plot({"a": ([1, 2], [1, 0])}, tmp_path / "x.png", "", "", "", logy=True)
    with pytest.raises(ValueError, match="at least one series"):
        line_plot({}, tmp_path / "x.png", "", "", "")


def test_bar_plot(tmp_path):
    path = bar_plot({"rnn": 452138.0, "lstm": 196749.0, "transformer": 0.0}, tmp_path / "bars.png", "speed", "tokens / s")
    img = imread(path)
    assert img.shape[:2] == (400, 500)
    assert img[..., :3].std() > 0.05  # something was drawn
    with pytest.raises(ValueError, match="finite values >= 0"):
        bar_plot({"a": -1.0}, tmp_path / "x.png")
    with pytest.raises(ValueError, match="at least one value"):
        bar_plot({}, tmp_path / "x.png")


def test_training_curves(tmp_path):
    rows = [{"step": s, "loss": 2.0 / (s + 1), "lr": 1e-3} for s in range(0, 100, 10)]
    rows += [{"step": s, "split": "val", "loss": 2.2 / (s + 1), "acc": s / 100} for s in range(0, 100, 25)]
    path = training_curves(rows, tmp_path / "curves.png", title="run")
    assert imread(path).shape[:2] == (420, 1100)
    with pytest.raises(ValueError, match="no loss or accuracy"):
        training_curves([{"step": 1, "lr": 0.1}], tmp_path / "y.png")
