"""The download path, end to end, against a local HTTP mirror of shared/data."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from seqlab.data import download, load_multi30k, load_shakespeare, load_sst2
from seqlab.data.download import REGISTRY, cache_dir, dataset_dir, dataset_file, fetch, safe_member_path
from seqlab.errors import ChecksumError, DataError


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_cache_dir_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("SEQLAB_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("SEQLAB_CACHE")
    assert cache_dir() == Path.home() / ".cache" / "seqlab"


def test_registry_covers_the_shared_checksums(shared_data):
    """Every line of SHA256SUMS is in the registry, with the same digest."""
    expected = {}
    for line in (shared_data / "SHA256SUMS").read_text().splitlines():
        digest, rel = line.split()
        expected[rel] = digest
    table = {f"{src.name}/{f.name}": f.sha256 for src in REGISTRY.values() for f in src.files}
    assert table == expected


def test_download_verifies_then_reuses_the_cache(private_cache, mirror_dir, serve, monkeypatch):
    server = serve(mirror_dir)
    monkeypatch.setenv("SEQLAB_DATA_URL", server.url)

    dev = load_sst2("dev")
    assert len(dev) == 872
    # One zip request brought both SST-2 files into the cache, nothing else.
    assert server.requests == ["/sst2/SST-2.zip"]
    assert files_in(private_cache) == ["dev.tsv", "train.tsv"]
    assert len(load_sst2("train")) == 67_349
    assert len(server.requests) == 1

    assert len(load_shakespeare()) == 1_115_394
    de, en = load_multi30k("val")
    assert len(de) == len(en) == 1014
    n = len(server.requests)
    assert n == 1 + 1 + 2

    # Second round: everything from the cache, no request at all.
    assert load_sst2("dev") == dev
    load_shakespeare()
    load_multi30k("val")
    assert len(server.requests) == n

    # The cached files are byte-identical to the shared ones.
    for rel in ("sst2/dev.tsv", "tinyshakespeare/input.txt", "multi30k/val.de"):
        digest = hashlib.sha256((private_cache / rel).read_bytes()).hexdigest()
        src, name = rel.split("/")
        assert digest == REGISTRY[src].file(name).sha256


def test_dataset_dir_fetches_a_whole_dataset_with_base_url(private_cache, mirror_dir, serve):
    server = serve(mirror_dir)
    folder = fetch("multi30k", base_url=server.url, progress=False)
    assert folder == private_cache / "multi30k"
    assert files_in(folder) == sorted(f.name for f in REGISTRY["multi30k"].files)
    assert len(server.requests) == 6
    assert dataset_dir("multi30k") == folder  # all cached: no base_url needed
    assert fetch("multi30k", base_url=server.url) == folder  # nothing missing: nothing fetched
    assert len(server.requests) == 6


def test_corrupted_download_raises_and_leaves_nothing(private_cache, mirror_dir, serve, tmp_path):
    bad = tmp_path / "bad_mirror" / "tinyshakespeare"
    bad.mkdir(parents=True)
    data = bytearray((mirror_dir / "tinyshakespeare" / "input.txt").read_bytes())
    data[1000] ^= 0x01  # one flipped bit
    (bad / "input.txt").write_bytes(bytes(data))
    server = serve(bad.parent)

    expected = REGISTRY["tinyshakespeare"].file("input.txt").sha256
    actual = hashlib.sha256(bytes(data)).hexdigest()
    with pytest.raises(ChecksumError) as err:
        dataset_file("tinyshakespeare", "input.txt", base_url=server.url, progress=False)
    msg = str(err.value)
    assert "input.txt" in msg and expected in msg and actual in msg
    assert files_in(private_cache) == []  # neither the file nor a .part remains


def test_corrupted_gzip_content_raises_checksum_error(private_cache, mirror_dir, serve, tmp_path):
    bad = tmp_path / "bad_mirror" / "multi30k"
    bad.mkdir(parents=True)
    shutil.copy(mirror_dir / "multi30k" / "val.en.gz", bad / "val.en.gz")
    (bad / "val.de.gz").write_bytes(gzip.compress(b"Ein falscher Satz.\n"))
    (bad / "test_2016_flickr.en.gz").write_bytes(b"this is not gzip at all")
    server = serve(bad.parent)

    assert dataset_file("multi30k", "val.en", base_url=server.url).is_file()
    with pytest.raises(ChecksumError, match="val.de"):
        dataset_file("multi30k", "val.de", base_url=server.url)
    with pytest.raises(DataError, match="gzip"):
        dataset_file("multi30k", "test2016.en", base_url=server.url)
    assert files_in(private_cache) == ["val.en"]


def test_zip_with_escaping_member_is_refused(private_cache, shared_data, serve, tmp_path):
    evil = tmp_path / "evil_mirror" / "sst2"
    evil.mkdir(parents=True)
    with zipfile.ZipFile(evil / "SST-2.zip", "w") as zf:
        # The wanted members are genuine; the archive is refused all the same.
        for name in ("train.tsv", "dev.tsv"):
            zf.write(shared_data / "sst2" / name, f"SST-2/{name}")
        zf.writestr("../evil", b"owned")
    server = serve(evil.parent)

    with pytest.raises(DataError, match="refusing zip member '../evil'"):
        dataset_file("sst2", "dev.tsv", base_url=server.url)
    assert files_in(private_cache) == []
    assert not (private_cache / "evil").exists() and not (tmp_path / "evil").exists()


@pytest.mark.parametrize("member", ["/etc/passwd", "../evil", "a/../../evil", "C:\\evil", "..\\evil", "a/b/../../../x"])
def test_safe_member_path_refuses_escapes(tmp_path, member):
    with pytest.raises(DataError, match="refusing"):
        safe_member_path(tmp_path, member)


def test_safe_member_path_allows_nested_names(tmp_path):
    assert safe_member_path(tmp_path, "SST-2/train.tsv") == (tmp_path / "SST-2" / "train.tsv").resolve()
    assert safe_member_path(tmp_path, "a/./b") == (tmp_path / "a" / "b").resolve()


def test_missing_file_on_server_names_the_url(private_cache, serve, tmp_path):
    server = serve(tmp_path)  # an empty mirror: every request is a 404
    with pytest.raises(DataError, match=r"could not download http://127\.0\.0\.1:\d+/tinyshakespeare/input\.txt"):
        dataset_file("tinyshakespeare", "input.txt", base_url=server.url)
    assert files_in(private_cache) == []


def test_only_http_urls_are_fetched(private_cache, tmp_path):
    with pytest.raises(DataError, match="only http"):
        dataset_file("tinyshakespeare", "input.txt", base_url=f"file://{tmp_path}")


def test_damaged_cache_file_is_downloaded_again(private_cache, mirror_dir, serve):
    server = serve(mirror_dir)
    path = dataset_file("tinyshakespeare", "input.txt", base_url=server.url)
    path.write_text("damaged")
    again = dataset_file("tinyshakespeare", "input.txt", base_url=server.url)
    assert again == path and len(server.requests) == 2
    assert len(again.read_text()) == 1_115_394


def test_no_download_when_disabled(private_cache):
    with pytest.raises(DataError, match="download=False"):
        dataset_file("sst2", "dev.tsv", download=False)


def test_unknown_dataset_and_file(private_cache):
    with pytest.raises(DataError, match="unknown dataset 'imdb'"):
        dataset_file("imdb", "train.tsv")
    with pytest.raises(DataError, match="no file 'test.tsv'"):
        dataset_file("sst2", "test.tsv")


# ---------------------------------------------------------------- local folders


def test_local_folder_from_env_and_argument(shared_data, private_cache, monkeypatch):
    monkeypatch.setenv("SEQLAB_DATA", str(shared_data))
    assert dataset_file("sst2", "dev.tsv") == shared_data / "sst2" / "dev.tsv"
    # data_dir may be the root or the dataset's own folder.
    monkeypatch.delenv("SEQLAB_DATA")
    assert dataset_file("sst2", "dev.tsv", shared_data) == shared_data / "sst2" / "dev.tsv"
    assert dataset_file("sst2", "dev.tsv", shared_data / "sst2") == shared_data / "sst2" / "dev.tsv"
    assert files_in(private_cache) == []  # nothing was downloaded or copied


def test_explicit_data_dir_beats_env(shared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQLAB_DATA", str(shared_data))
    with pytest.raises(DataError, match="not found in"):
        load_sst2("dev", data_dir=tmp_path)


def test_env_folder_with_dataset_but_missing_file_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "sst2").mkdir()
    monkeypatch.setenv("SEQLAB_DATA", str(tmp_path))
    with pytest.raises(DataError, match="has no dev.tsv"):
        dataset_file("sst2", "dev.tsv")


def test_local_file_with_wrong_checksum_is_refused_not_deleted(shared_data, tmp_path):
    folder = tmp_path / "sst2"
    folder.mkdir()
    good = (shared_data / "sst2" / "dev.tsv").read_bytes()
    (folder / "dev.tsv").write_bytes(good.replace(b"\t1\n", b"\t0\n", 1))
    with pytest.raises(ChecksumError, match="dev.tsv"):
        load_sst2("dev", data_dir=tmp_path)
    assert (folder / "dev.tsv").exists()  # a user's file is never deleted


def test_verification_is_memoised_but_notices_changes(tmp_path, shared_data, monkeypatch):
    folder = tmp_path / "sst2"
    folder.mkdir()
    shutil.copy(shared_data / "sst2" / "dev.tsv", folder / "dev.tsv")
    calls = []
    real = hashlib.sha256
    monkeypatch.setattr(download.hashlib, "sha256", lambda *a: calls.append(1) or real(*a))
    dataset_file("sst2", "dev.tsv", tmp_path)
    dataset_file("sst2", "dev.tsv", tmp_path)
    assert len(calls) == 1  # hashed once, then remembered by (path, size, mtime)

    with open(folder / "dev.tsv", "ab") as f:
        f.write(b"extra row \t1\n")
    with pytest.raises(ChecksumError):
        dataset_file("sst2", "dev.tsv", tmp_path)
    assert len(calls) == 2


def test_progress_bar_only_when_asked(private_cache, mirror_dir, serve, capsys):
    server = serve(mirror_dir)
    fetch("tinyshakespeare", base_url=server.url, progress=False)
    assert capsys.readouterr() == ("", "")
    os.remove(private_cache / "tinyshakespeare" / "input.txt")
    fetch("tinyshakespeare", base_url=server.url, progress=True)
    assert "input.txt" in capsys.readouterr().err


def test_interrupted_transfer_is_a_data_error(private_cache):
    import http.server
    import threading

    class Truncating(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"First Citizen:\n")  # then the connection closes early

        def log_message(self, *args) -> None:  # type: ignore[no-untyped-def]
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Truncating)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        with pytest.raises(DataError, match="interrupted"):
            dataset_file("tinyshakespeare", "input.txt", base_url=f"http://127.0.0.1:{httpd.server_address[1]}")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert files_in(private_cache) == []
