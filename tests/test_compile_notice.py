"""The first run after installing waits while Numba compiles seqlab's kernels; on a terminal the command line
says so (one line), and nowhere else does anything get printed for it."""
import sys

import pytest

from seqlab import kernels
from seqlab.cli.main import main


def test_one_line_at_the_first_compile_and_none_after(monkeypatch):
    numba = pytest.importorskip("numba")
    if kernels.library() != "numba":
        pytest.skip("seqlab's kernels are off here (SEQLAB_KERNELS=numpy)")
    said = []
    kernels.announce_compiles(said.append)
    try:
        @numba.njit
        def twice(x):  # a function no cache holds: this call compiles
            return 2 * x

        assert twice(3) == 6 and twice(1.5) == 3.0  # two compiles, one line
        assert len(said) == 1 and "compiling seqlab's Numba kernels" in said[0] and "cache" in said[0]
        kernels.announce_compiles(None)

        @numba.njit
        def thrice(x):
            return 3 * x

        assert thrice(2) == 6 and len(said) == 1  # switched off: nothing more
    finally:
        kernels.announce_compiles(None)


@pytest.mark.parametrize("tty", [True, False])
def test_the_cli_announces_only_on_a_terminal(monkeypatch, tmp_path, tty):
    calls = []
    monkeypatch.setattr(kernels, "announce_compiles", calls.append)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    assert main(["train", "toy-classifier", "--out", str(tmp_path / "r"), "--set", "max_steps=2"]) == 0
    assert len(calls) == (1 if tty else 0) and (not tty or callable(calls[0]))
