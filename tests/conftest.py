"""Suite-wide set-up.

Tests run with ``--import-mode=importlib`` (test files in different folders
may share a name), so folders are not put on ``sys.path`` by pytest; this puts
``tests/`` and each test folder there, so ``from helpers import check_op``
and a folder's own helper module import everywhere. Helper modules have
unique names across folders. The `cli` fixture runs the command line in
this process.
"""
import sys
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parent
for _folder in [_TESTS, *sorted(p for p in _TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))]:
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))


def _cuda_available() -> bool:
    from seqlab import backend

    return backend.cuda_available()


@pytest.fixture
def cli(capsys):
    """Run `seqlab ARGS...` in this process; returns (exit code, stdout, stderr)."""
    from seqlab.cli.main import main

    def run(*argv):
        capsys.readouterr()
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err
    return run


@pytest.fixture(params=["stand-in"] + (["cupy"] if _cuda_available() else []))
def cuda(request, monkeypatch):
    """The array module behind device "cuda": the CPU stand-in (tests/cupy_stand_in.py), or CuPy itself on a
    machine with a GPU."""
    from seqlab import backend

    if request.param == "cupy":  # pragma: no cover - needs a GPU
        return backend.get_xp("cuda")
    import cupy_stand_in

    return cupy_stand_in.install(monkeypatch)


@pytest.fixture
def numpy_kernels():
    """NumPy's formulas for the test: seqlab.kernels' compiled kernels off, whatever SEQLAB_KERNELS says."""
    from seqlab import kernels

    kernels.use("numpy")
    yield
    kernels.use(None)


@pytest.fixture(params=["numpy", "numba"])
def row_kernels(request):
    """The test once on NumPy's formulas and once on seqlab.kernels' compiled kernels (skipped without Numba)."""
    from seqlab import kernels
    from seqlab.errors import ConfigError

    try:
        kernels.use(request.param)
    except ConfigError:
        kernels.use(None)
        pytest.skip("Numba is not installed")
    yield request.param
    kernels.use(None)
