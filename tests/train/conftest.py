"""Shared helpers for the trainer tests: the CLI in-process, and quick toy-classifier runs."""
from __future__ import annotations

import pytest


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
