"""Fixtures for the data layer: the shared datasets, a local HTTP mirror, a private cache."""

from __future__ import annotations

import gzip
import http.server
import os
import shutil
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def shared_data_dir() -> Path:
    """``$SEQLAB_DATA`` if set, else ``<repo>/../shared/data`` (the CI layout)."""
    env = os.environ.get("SEQLAB_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    root = shared_data_dir()
    if not (root / "sst2" / "dev.tsv").is_file():
        pytest.skip(f"shared datasets not found at {root} (set SEQLAB_DATA)")
    return root


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache and no local data folder: loaders must download."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SEQLAB_CACHE", str(cache))
    monkeypatch.delenv("SEQLAB_DATA", raising=False)
    monkeypatch.delenv("SEQLAB_DATA_URL", raising=False)
    return cache


def build_mirror(shared: Path, dest: Path) -> Path:
    """Lay out ``shared/data`` the way the public sources serve it.

    sst2/SST-2.zip (members SST-2/train.tsv, SST-2/dev.tsv), tinyshakespeare/input.txt,
    multi30k/{train,val,test_2016_flickr}.{en,de}.gz.
    """
    (dest / "sst2").mkdir(parents=True)
    with zipfile.ZipFile(dest / "sst2" / "SST-2.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name in ("train.tsv", "dev.tsv"):
            zf.write(shared / "sst2" / name, f"SST-2/{name}")
    (dest / "tinyshakespeare").mkdir()
    shutil.copyfile(shared / "tinyshakespeare" / "input.txt", dest / "tinyshakespeare" / "input.txt")
    (dest / "multi30k").mkdir()
    for split, remote in (("train", "train"), ("val", "val"), ("test2016", "test_2016_flickr")):
        for lang in ("en", "de"):
            data = (shared / "multi30k" / f"{split}.{lang}").read_bytes()
            (dest / "multi30k" / f"{remote}.{lang}.gz").write_bytes(gzip.compress(data, compresslevel=1))
    return dest


@pytest.fixture(scope="session")
def mirror_dir(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_mirror(shared_data, tmp_path_factory.mktemp("mirror"))


@dataclass
class Server:
    """A static file server on 127.0.0.1 that records every requested path."""

    root: Path
    url: str = ""
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def serve() -> Iterator:
    """``serve(folder) -> Server``; every server is shut down after the test."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(root: Path) -> Server:
        info = Server(root)

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
                super().__init__(*args, directory=str(root), **kwargs)

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                info.requests.append(self.path)
                super().do_GET()

            def log_message(self, *args) -> None:  # type: ignore[no-untyped-def]
                pass  # keep test output clean

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # port 0: a free port
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(httpd)
        info.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        return info

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()
